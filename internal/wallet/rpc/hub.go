package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/surge-dev/surge/internal/front"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// streamBuffer is how many events a stream may fall behind before it is
// ended: publishing never waits for a slow client.
const streamBuffer = 1024

var errLagged = connect.NewError(connect.CodeResourceExhausted,
	errors.New("stream fell too far behind; subscribe again and read missed messages with GetMessages"))

// subscriber is one open Subscribe stream.
type subscriber struct {
	user   social.UserID
	events chan *walletv1.Event
	// lagged is closed when the hub dropped the stream for falling behind.
	lagged chan struct{}
}

// hub routes published messages to the streams of their two users, and
// relation changes to the other user's. It is guarded by Service.mu, under
// which events are published, so every stream sees them in the order they
// became visible.
type hub struct {
	subs map[social.UserID]map[*subscriber]struct{}
}

func newHub() hub { return hub{subs: make(map[social.UserID]map[*subscriber]struct{})} }

func (h *hub) add(sub *subscriber) {
	m := h.subs[sub.user]
	if m == nil {
		m = make(map[*subscriber]struct{})
		h.subs[sub.user] = m
	}
	m[sub] = struct{}{}
}

// remove reports whether sub was still registered.
func (h *hub) remove(sub *subscriber) bool {
	m := h.subs[sub.user]
	if _, ok := m[sub]; !ok {
		return false
	}
	delete(m, sub)
	if len(m) == 0 {
		delete(h.subs, sub.user)
	}
	return true
}

// send queues ev on every stream of user, dropping streams that are full.
// It returns the streams dropped.
func (h *hub) send(user social.UserID, ev *walletv1.Event) (dropped []*subscriber) {
	for sub := range h.subs[user] {
		select {
		case sub.events <- ev:
		default:
			dropped = append(dropped, sub)
		}
	}
	return dropped
}

// publish applies a durable message and sends it to both users' streams.
func (s *Service) publish(m social.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(m)
}

// publishLocked is publish under the write lock.
func (s *Service) publishLocked(m social.Message) {
	ev := &walletv1.Event{Event: &walletv1.Event_Message{Message: messagePB(&m)}}
	s.state.AddMessage(m)
	s.notify(m.From, ev)
	s.notify(m.To, ev)
}

// notify sends ev to user's streams, ending those that fell behind; it
// runs under the write lock.
func (s *Service) notify(user social.UserID, ev *walletv1.Event) {
	for _, sub := range s.hub.send(user, ev) {
		s.unsubscribe(sub)
		close(sub.lagged)
	}
}

// subscribe opens a stream for user; it counts as online while open (in
// a cluster, once the node has announced it: presence.go).
func (s *Service) subscribe(user social.UserID) *subscriber {
	sub := &subscriber{user: user, events: make(chan *walletv1.Event, streamBuffer), lagged: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hub.add(sub)
	if s.presence == nil {
		s.state.SetOnline(user, 1)
	}
	return sub
}

// unsubscribe closes sub's registration; it runs under the write lock.
func (s *Service) unsubscribe(sub *subscriber) {
	if s.hub.remove(sub) && s.presence == nil {
		s.state.SetOnline(sub.user, -1)
	}
}

// Subscribe streams the caller's new messages until the client goes away
// or falls behind.
func (s chatService) Subscribe(ctx context.Context, _ *walletv1.SubscribeRequest, stream sender[walletv1.Event]) error {
	sub := s.subscribe(caller(ctx))
	defer func() {
		s.mu.Lock()
		s.unsubscribe(sub)
		s.mu.Unlock()
		s.announce(sub.user)
	}()
	s.announce(sub.user)
	// Headers first, so the client knows the stream is open before any
	// message arrives.
	if err := stream.Open(); err != nil {
		return err
	}
	front.Park(ctx)
	for {
		select {
		case ev := <-sub.events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-sub.lagged:
			return errLagged
		case <-ctx.Done():
			return nil
		}
	}
}
