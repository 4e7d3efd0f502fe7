package rpc

import (
	"context"
	"time"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// chatService implements ChatService (Subscribe is in hub.go).
type chatService struct{ *Service }

// SendMessage sends a text message to a friend. The pair's changes are
// serialised from numbering the message to publishing it; the message is
// fsync'd before anyone sees it.
func (s chatService) SendMessage(ctx context.Context, req *walletv1.SendMessageRequest) (*walletv1.SendMessageResponse, error) {
	me, to := caller(ctx), social.UserID(req.ToUserId)
	if me == to {
		return nil, invalid("cannot message yourself")
	}
	if s.repl != nil {
		return s.proposeText(ctx, me, to, req.Text)
	}
	unlock := s.pairs.lock(social.PairOf(me, to))
	defer unlock()
	s.mu.RLock()
	m, err := s.state.NewText(me, to, req.Text, time.Now().UTC())
	s.mu.RUnlock()
	if err != nil {
		return nil, socialError(err)
	}
	b := s.store.NewSocialBatch()
	b.PutMessage(&m)
	if err := s.store.Commit(b.Batch); err != nil {
		return nil, s.internal("write message", err)
	}
	s.publish(m)
	return &walletv1.SendMessageResponse{Message: messagePB(&m)}, nil
}

// GetMessages pages through the caller's conversation with a peer, newest
// first, up to the newest published message: storage may already hold a
// message whose fsync has not completed, and that one must not show.
func (s chatService) GetMessages(ctx context.Context, m *walletv1.GetMessagesRequest) (*walletv1.GetMessagesResponse, error) {
	me, err := owner(ctx, m.UserId)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	before, err := parsePageToken(m.PageToken)
	if err != nil {
		return nil, err
	}
	peer := social.UserID(m.PeerId)
	s.mu.RLock()
	_, known := s.state.User(peer)
	var last uint64
	if c, ok := s.state.Conversation(me, peer); ok {
		last = c.Last.Seq
	}
	s.mu.RUnlock()
	if !known || peer == me {
		return nil, connect.NewError(connect.CodeNotFound, errNoPeer(m.PeerId))
	}
	if before == 0 || before > last+1 {
		before = last + 1
	}
	msgs, err := s.store.Messages(social.PairOf(me, peer), before, limit)
	if err != nil {
		return nil, s.internal("read messages", err)
	}
	out := &walletv1.GetMessagesResponse{Messages: make([]*walletv1.Message, len(msgs))}
	for i := range msgs {
		out.Messages[i] = messagePB(&msgs[i])
	}
	if n := len(msgs); n == limit && msgs[n-1].Seq > 1 {
		out.NextPageToken = pageToken(msgs[n-1].Seq)
	}
	return out, nil
}

// MarkRead moves the caller's read mark in a conversation forward.
func (s chatService) MarkRead(ctx context.Context, req *walletv1.MarkReadRequest) (*walletv1.MarkReadResponse, error) {
	me, peer := caller(ctx), social.UserID(req.PeerId)
	if s.repl != nil {
		return s.proposeMarkRead(ctx, me, peer, req.UpToMessageId)
	}
	p := social.PairOf(me, peer)
	unlock := s.pairs.lock(p)
	defer unlock()
	s.mu.RLock()
	c, ok := s.state.Conversation(me, peer)
	var head social.Conversation
	if ok {
		head = *c
	}
	s.mu.RUnlock()
	if !ok || peer == me {
		return nil, connect.NewError(connect.CodeNotFound, errNoPeer(req.PeerId))
	}
	target, err := s.readTarget(head, req.UpToMessageId)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	mark, changed, err := s.state.MarkRead(me, peer, target)
	s.mu.RUnlock()
	if err != nil {
		return nil, socialError(err)
	}
	if changed {
		read := head.Read
		read[sideOf(p, me)] = mark
		b := s.store.NewSocialBatch()
		b.PutHead(p, head.Last.Seq, read)
		if err := s.store.Commit(b.Batch); err != nil {
			return nil, s.internal("write read mark", err)
		}
		s.mu.Lock()
		s.state.SetReadMark(me, peer, mark)
		s.mu.Unlock()
	}
	s.mu.RLock()
	unread := c.Unread(me)
	s.mu.RUnlock()
	return &walletv1.MarkReadResponse{UnreadCount: unread}, nil
}

// readTarget is the message a MarkRead reads up to: the newest for 0.
func (s chatService) readTarget(head social.Conversation, upTo uint64) (social.Message, error) {
	switch {
	case upTo == 0 || upTo == head.Last.Seq:
		return head.Last, nil
	case upTo > head.Last.Seq:
		return social.Message{}, connect.NewError(connect.CodeNotFound, errNoMessage(upTo))
	}
	m, ok, err := s.store.Message(head.Pair, upTo)
	if err != nil {
		return social.Message{}, s.internal("read message", err)
	}
	if !ok {
		return social.Message{}, connect.NewError(connect.CodeNotFound, errNoMessage(upTo))
	}
	return m, nil
}

func sideOf(p social.Pair, u social.UserID) int {
	if u == p.Lo {
		return 0
	}
	return 1
}
