package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/wallet/social"
)

// In cluster mode (docs/CLUSTER.md, "Presence in a cluster") a user is
// online if any node holds a stream of theirs. Each node incarnation
// appends to the social log when a user's first stream on it opens and
// when their last one closes, a snapshot of the users it holds when it
// starts or when another node starts, and a beat every PresenceBeat while
// any incarnation holds a user. Every node applies these records in log
// order into the same table; an incarnation whose latest record is older
// than presenceTTL by the log's own clock (the latest time carried by a
// presence record) loses its users, so every node expires a dead node's
// users at the same record.

// PresenceBeat is how often a node renews its incarnation's entries while
// any incarnation holds a user (BeatPresence); presenceTTL is how long an
// incarnation's entries last without a record of it.
const (
	PresenceBeat = 5 * time.Second
	presenceTTL  = 15 * time.Second
)

// presenceCall bounds a presence append made on a stream's behalf.
const presenceCall = 10 * time.Second

// keyPresenceNode holds the node's presence name in its store, so a node
// that restarts on its data clears its former incarnation's entries.
var keyPresenceNode = []byte("sk/presence-node")

// incarnation is what the log says one node incarnation holds.
type incarnation struct {
	node  string
	seen  time.Time // the latest time of its records
	users map[social.UserID]struct{}
}

// presence is a cluster node's presence: the table applied from the log
// (guarded by Service.mu) and what this incarnation has announced.
type presence struct {
	node, inc string
	now       func() time.Time // the time presence records carry

	// Guarded by Service.mu.
	incs  map[string]*incarnation
	clock time.Time // the latest time of the presence records applied
	owed  bool      // a snapshot of this incarnation is owed
	// watch is told of each flip; here if this incarnation's record
	// made it.
	watch func(user social.UserID, online, here bool)

	// kick wakes the beat loop when a snapshot is owed.
	kick chan struct{}

	// mu is held shared by a user's append (announce), which also holds
	// the user's stripe, and exclusively by a snapshot or beat.
	mu    sync.RWMutex
	users stripes[social.UserID]
	// announced is what this incarnation last appended of each user it
	// holds; guarded by announcedMu, or by mu held exclusively.
	announcedMu sync.Mutex
	announced   map[social.UserID]bool
}

// newPresence names the node (a name kept by secret, the store's
// Secret) and its incarnation.
func newPresence(secret func(key []byte, generate func() ([]byte, error)) ([]byte, error)) (*presence, error) {
	name, err := secret(keyPresenceNode, func() ([]byte, error) { return randomID() })
	if err != nil {
		return nil, fmt.Errorf("rpc: presence node name: %w", err)
	}
	inc, err := randomID()
	if err != nil {
		return nil, err
	}
	return &presence{
		node: hex.EncodeToString(name), inc: hex.EncodeToString(inc), now: time.Now,
		incs: map[string]*incarnation{}, kick: make(chan struct{}, 1), announced: map[social.UserID]bool{},
		users: newStripes(func(u social.UserID) uint64 { return uint64(u) }),
	}, nil
}

func randomID() ([]byte, error) {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	return b, err
}

// applyPresence applies a presence command under the write lock.
func (s *Service) applyPresence(c presenceCommand) {
	p := s.presence
	if p == nil {
		return
	}
	h := c.head()
	if h.At.After(p.clock) {
		p.clock = h.At
	}
	inc := p.incs[h.Inc]
	if inc == nil {
		inc = &incarnation{node: h.Node, users: map[social.UserID]struct{}{}}
		p.incs[h.Inc] = inc
	}
	if h.At.After(inc.seen) {
		inc.seen = h.At
	}
	switch o := c.(type) {
	case *userPresenceOp:
		if o.online {
			s.holdLocked(inc, o.User)
		} else {
			s.releaseLocked(inc, o.User)
		}
	case *snapshotOp:
		s.applySnapshot(o, inc)
	}
	s.expireLocked()
}

// applySnapshot makes inc hold exactly o.Users; a start also drops the
// node's other incarnations and owes the start a snapshot of this one.
func (s *Service) applySnapshot(o *snapshotOp, inc *incarnation) {
	p := s.presence
	if o.Start {
		for id, other := range p.incs {
			if other.node == o.Node && id != o.Inc {
				s.dropLocked(id, other)
			}
		}
		if o.Inc != p.inc {
			p.oweLocked()
		}
	}
	keep := make(map[social.UserID]struct{}, len(o.Users))
	for _, u := range o.Users {
		keep[u] = struct{}{}
		s.holdLocked(inc, u)
	}
	for u := range inc.users {
		if _, ok := keep[u]; !ok {
			s.releaseLocked(inc, u)
		}
	}
}

// expireLocked drops the incarnations not heard of for presenceTTL.
func (s *Service) expireLocked() {
	p := s.presence
	for id, inc := range p.incs {
		if p.clock.Sub(inc.seen) > presenceTTL {
			s.dropLocked(id, inc)
		}
	}
}

// dropLocked forgets incarnation id; if it is this one (its beats did not
// reach the log in time), a snapshot is owed to bring its users back.
func (s *Service) dropLocked(id string, inc *incarnation) {
	for u := range inc.users {
		s.releaseLocked(inc, u)
	}
	delete(s.presence.incs, id)
	if id == s.presence.inc {
		s.presence.oweLocked()
	}
}

// oweLocked owes the log a snapshot of this incarnation and wakes the
// beat loop.
func (p *presence) oweLocked() {
	p.owed = true
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// holdLocked records that inc holds u, telling the watcher if u comes
// online.
func (s *Service) holdLocked(inc *incarnation, u social.UserID) {
	if _, ok := inc.users[u]; ok {
		return
	}
	inc.users[u] = struct{}{}
	was := s.state.Online(u)
	s.state.SetOnline(u, 1)
	if w := s.presence.watch; w != nil && !was {
		w(u, true, inc == s.presence.incs[s.presence.inc])
	}
}

// releaseLocked records that inc no longer holds u, telling the watcher if
// u goes offline.
func (s *Service) releaseLocked(inc *incarnation, u social.UserID) {
	if _, ok := inc.users[u]; !ok {
		return
	}
	delete(inc.users, u)
	s.state.SetOnline(u, -1)
	if w := s.presence.watch; w != nil && !s.state.Online(u) {
		w(u, false, inc == s.presence.incs[s.presence.inc])
	}
}

// announce appends user's presence on this incarnation if it changed
// since it was last appended: online while the node holds a stream of
// theirs. A failed append owes the log a snapshot, which the next beat
// makes.
func (s *Service) announce(user social.UserID) {
	p := s.presence
	if p == nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	defer p.users.lock(user)()
	s.mu.RLock()
	want := len(s.hub.subs[user]) > 0
	s.mu.RUnlock()
	p.announcedMu.Lock()
	same := p.announced[user] == want
	p.announcedMu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), presenceCall)
	defer cancel()
	if _, err := s.proposePresence(ctx, &userPresenceOp{User: user, online: want}); err != nil {
		s.log.Warn("wallet: appending a user's presence", "user", user, "err", err)
		s.mu.Lock()
		p.oweLocked()
		s.mu.Unlock()
		return
	}
	p.announcedMu.Lock()
	defer p.announcedMu.Unlock()
	if want {
		p.announced[user] = true
	} else {
		delete(p.announced, user)
	}
}

// proposePresence appends c as this incarnation's, at now.
func (s *Service) proposePresence(ctx context.Context, c presenceCommand) (outcome, error) {
	h := c.head()
	h.At, h.Node, h.Inc = s.presence.now().UTC(), s.presence.node, s.presence.inc
	return s.propose(ctx, c)
}

// StartPresence appends that this node's new incarnation holds no
// streams, which drops the entries of the node's former incarnations and
// asks every other node for a snapshot of its own; a node calls it once
// it has caught up with the log, before serving. It does nothing on a
// single node.
func (s *Service) StartPresence(ctx context.Context) error {
	if s.presence == nil {
		return nil
	}
	s.presence.mu.Lock()
	defer s.presence.mu.Unlock()
	_, err := s.proposePresence(ctx, &snapshotOp{Start: true})
	return err
}

// PresenceOwed fires when this node owes the log a snapshot of its
// presence (BeatPresence appends it); nil on a single node.
func (s *Service) PresenceOwed() <-chan struct{} {
	if s.presence == nil {
		return nil
	}
	return s.presence.kick
}

// BeatPresence is called every PresenceBeat and when PresenceOwed fires:
// it renews this incarnation's entries while any incarnation holds a
// user, and appends a snapshot of the users it holds when one is owed. It
// does nothing on a single node.
func (s *Service) BeatPresence(ctx context.Context) error {
	if s.presence == nil {
		return nil
	}
	return s.beat(ctx)
}

// beat appends one beat, or a snapshot if one is owed; none if no
// incarnation holds a user and none is owed.
func (s *Service) beat(ctx context.Context) error {
	p := s.presence
	p.mu.Lock()
	defer p.mu.Unlock()
	s.mu.Lock()
	owed, needed := p.owed, p.owed
	p.owed = false
	for _, inc := range p.incs {
		needed = needed || len(inc.users) > 0
	}
	held := slices.Collect(maps.Keys(s.hub.subs))
	s.mu.Unlock()
	if !needed {
		return nil
	}
	var c presenceCommand = &beatOp{}
	if owed {
		c = &snapshotOp{Users: held}
	}
	if _, err := s.proposePresence(ctx, c); err != nil {
		if owed {
			s.mu.Lock()
			p.owed = true
			s.mu.Unlock()
		}
		return err
	}
	if owed {
		clear(p.announced)
		for _, u := range held {
			p.announced[u] = true
		}
	}
	return nil
}
