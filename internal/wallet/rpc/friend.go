package rpc

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

func errNoPeer(id uint64) error    { return fmt.Errorf("no conversation with user %d", id) }
func errNoMessage(id uint64) error { return fmt.Errorf("no message %d in this conversation", id) }
func errNoUser(name string) error  { return fmt.Errorf("user %q not found", name) }
func errNoTarget() *connect.Error  { return invalid("user_id or username is required") }

// friendService implements FriendService.
type friendService struct{ *Service }

// relAction is a change of a relation a user asks for.
type relAction uint8

const (
	relRequest relAction = iota + 1 // AddFriend
	relAccept                       // AcceptFriend
	relReject                       // RejectFriend
	relRemove                       // RemoveFriend
)

// decideRelation decides what me's action on the pair with peer makes of
// their relation, at now; it runs under s.mu.
func (s *Service) decideRelation(a relAction, me, peer social.UserID, now time.Time) (social.Relation, error) {
	switch a {
	case relRequest:
		return s.state.FriendRequest(me, peer, now)
	case relAccept:
		return s.state.Accept(me, peer, now)
	case relReject:
		return s.state.Reject(me, peer)
	case relRemove:
		return s.state.Remove(me, peer, now)
	}
	return social.Relation{}, fmt.Errorf("relation action %d", a)
}

// changeRelation decides me's action on the pair with peer, makes the
// change durable, applies it and tells peer's streams; the pair's changes
// are serialised meanwhile.
func (s friendService) changeRelation(me, peer social.UserID, a relAction) (*walletv1.Friend, error) {
	now := time.Now().UTC()
	if s.repl != nil {
		return s.proposeRelation(me, peer, a, now)
	}
	unlock := s.pairs.lock(social.PairOf(me, peer))
	defer unlock()
	s.mu.RLock()
	r, err := s.decideRelation(a, me, peer, now)
	old, existed := s.state.Relation(me, peer)
	s.mu.RUnlock()
	if err != nil {
		return nil, socialError(err)
	}
	if existed && old == r || !existed && r.State == social.RelationNone {
		return s.friendOf(me, peer, r), nil
	}
	b := s.store.NewSocialBatch()
	b.PutRelation(&r)
	if err := s.store.Commit(b.Batch); err != nil {
		return nil, s.internal("write friendship", err)
	}
	s.mu.Lock()
	s.state.SetRelation(r)
	s.notify(peer, &walletv1.Event{Event: &walletv1.Event_Friend{Friend: s.friendLocked(peer, me, r)}})
	s.mu.Unlock()
	return s.friendOf(me, peer, r), nil
}

// friendOf is peer as me sees them under r; nil if they have no relation.
func (s friendService) friendOf(me, peer social.UserID, r social.Relation) *walletv1.Friend {
	if r.State == social.RelationNone {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.friendLocked(me, peer, r)
}

// friendLocked is peer as me sees them under r (STATUS_UNSPECIFIED for
// none); it runs under s.mu.
func (s friendService) friendLocked(me, peer social.UserID, r social.Relation) *walletv1.Friend {
	u, _ := s.state.User(peer)
	f := &walletv1.Friend{User: s.userPB(u)}
	if r.State != social.RelationNone {
		f.Status = friendStatusPB[r.StatusFor(me)]
	}
	return f
}

// AddFriend asks a user, by id or username, to be friends.
func (s friendService) AddFriend(ctx context.Context, req *walletv1.AddFriendRequest) (*walletv1.AddFriendResponse, error) {
	me := caller(ctx)
	var peer social.UserID
	switch t := req.User.(type) {
	case *walletv1.AddFriendRequest_UserId:
		peer = social.UserID(t.UserId)
	case *walletv1.AddFriendRequest_Username:
		s.mu.RLock()
		u, ok := s.state.UserByName(t.Username)
		s.mu.RUnlock()
		if !ok {
			return nil, connect.NewError(connect.CodeNotFound, errNoUser(t.Username))
		}
		peer = u.ID
	default:
		return nil, errNoTarget()
	}
	f, err := s.changeRelation(me, peer, relRequest)
	if err != nil {
		return nil, err
	}
	return &walletv1.AddFriendResponse{Friend: f}, nil
}

// AcceptFriend accepts a pending request from user_id.
func (s friendService) AcceptFriend(ctx context.Context, req *walletv1.AcceptFriendRequest) (*walletv1.AcceptFriendResponse, error) {
	me, peer := caller(ctx), social.UserID(req.UserId)
	f, err := s.changeRelation(me, peer, relAccept)
	if err != nil {
		return nil, err
	}
	return &walletv1.AcceptFriendResponse{Friend: f}, nil
}

// RejectFriend turns down a pending request from user_id, or withdraws the
// caller's own request to user_id.
func (s friendService) RejectFriend(ctx context.Context, req *walletv1.RejectFriendRequest) (*walletv1.RejectFriendResponse, error) {
	me, peer := caller(ctx), social.UserID(req.UserId)
	if _, err := s.changeRelation(me, peer, relReject); err != nil {
		return nil, err
	}
	return &walletv1.RejectFriendResponse{}, nil
}

// RemoveFriend ends the caller's friendship with user_id, for both.
func (s friendService) RemoveFriend(ctx context.Context, req *walletv1.RemoveFriendRequest) (*walletv1.RemoveFriendResponse, error) {
	me, peer := caller(ctx), social.UserID(req.UserId)
	f, err := s.changeRelation(me, peer, relRemove)
	if err != nil {
		return nil, err
	}
	return &walletv1.RemoveFriendResponse{Friend: f}, nil
}

// GetFriendList lists the caller's friends and open requests.
func (s friendService) GetFriendList(ctx context.Context, req *walletv1.GetFriendListRequest) (*walletv1.GetFriendListResponse, error) {
	me, err := owner(ctx, req.UserId)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	friends := s.state.Friends(me)
	out := make([]*walletv1.Friend, len(friends))
	for i, f := range friends {
		out[i] = &walletv1.Friend{User: s.userPB(f.User), Status: friendStatusPB[f.Status]}
	}
	return &walletv1.GetFriendListResponse{Friends: out}, nil
}

// GetChatFriendList lists the caller's friends by latest message.
func (s friendService) GetChatFriendList(ctx context.Context, req *walletv1.GetChatFriendListRequest) (*walletv1.GetChatFriendListResponse, error) {
	me, err := owner(ctx, req.UserId)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	friends := s.state.ChatFriends(me)
	out := make([]*walletv1.ChatFriend, len(friends))
	for i, f := range friends {
		cf := &walletv1.ChatFriend{User: s.userPB(f.User), UnreadCount: f.Unread, Status: friendStatusPB[f.Status]}
		if f.Last != nil {
			cf.LastMessage = messagePB(f.Last)
		}
		out[i] = cf
	}
	return &walletv1.GetChatFriendListResponse{Friends: out}, nil
}
