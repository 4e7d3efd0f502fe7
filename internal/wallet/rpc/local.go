package rpc

import (
	"context"
	"strings"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// Local is the wallet called in process, by the other faces of the same
// users, wallets and conversations (internal/wallet/vmr). Each call is the RPC of
// the same name run as the user given, with the same checks, effects and
// errors (*connect.Error); peer is the client's host:port, for the login
// rate limit.
type Local struct{ s *Service }

// Local returns the in-process API of s.
func (s *Service) Local() Local { return Local{s} }

// runAs runs fn as user from peer.
func runAs[Req, Res any](ctx context.Context, user uint64, peer string, fn func(context.Context, *Req) (*Res, error), req *Req) (*Res, error) {
	return fn(context.WithValue(ctx, callInfoKey{}, &callInfo{user: social.UserID(user), peer: peer}), req)
}

// Sync makes the node's view as new as the cluster's when the call began;
// a face calls it before it reads (Replicator.Sync). It does nothing on a
// single node.
func (l Local) Sync(ctx context.Context) error { return l.s.sync(ctx) }

// Verify returns the user a token was issued to.
func (l Local) Verify(token string) (uint64, error) { return l.s.tokens.Verify(token) }

// Register is AuthService.Register.
func (l Local) Register(ctx context.Context, peer string, req *walletv1.RegisterRequest) (*walletv1.RegisterResponse, error) {
	return runAs(ctx, 0, peer, authService{l.s}.Register, req)
}

// Login is AuthService.Login.
func (l Local) Login(ctx context.Context, peer string, req *walletv1.LoginRequest) (*walletv1.LoginResponse, error) {
	return runAs(ctx, 0, peer, authService{l.s}.Login, req)
}

// GetBalance is WalletService.GetBalance.
func (l Local) GetBalance(ctx context.Context, user uint64) (*walletv1.GetBalanceResponse, error) {
	return runAs(ctx, user, "", walletService{l.s}.GetBalance, &walletv1.GetBalanceRequest{})
}

// Transfer is WalletService.Transfer.
func (l Local) Transfer(ctx context.Context, user uint64, peer string, req *walletv1.TransferRequest) (*walletv1.TransferResponse, error) {
	return runAs(ctx, user, peer, walletService{l.s}.Transfer, req)
}

// GetHistory is WalletService.GetHistory.
func (l Local) GetHistory(ctx context.Context, user uint64, req *walletv1.GetHistoryRequest) (*walletv1.GetHistoryResponse, error) {
	return runAs(ctx, user, "", walletService{l.s}.GetHistory, req)
}

// RemindTransfer is WalletService.RemindTransfer.
func (l Local) RemindTransfer(ctx context.Context, user uint64, req *walletv1.RemindTransferRequest) (*walletv1.RemindTransferResponse, error) {
	return runAs(ctx, user, "", walletService{l.s}.RemindTransfer, req)
}

// GetReminders is WalletService.GetReminders.
func (l Local) GetReminders(ctx context.Context, user uint64, req *walletv1.GetRemindersRequest) (*walletv1.GetRemindersResponse, error) {
	return runAs(ctx, user, "", walletService{l.s}.GetReminders, req)
}

// AddFriend is FriendService.AddFriend.
func (l Local) AddFriend(ctx context.Context, user, peer uint64) (*walletv1.AddFriendResponse, error) {
	req := &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: peer}}
	return runAs(ctx, user, "", friendService{l.s}.AddFriend, req)
}

// AcceptFriend is FriendService.AcceptFriend.
func (l Local) AcceptFriend(ctx context.Context, user, requester uint64) (*walletv1.AcceptFriendResponse, error) {
	return runAs(ctx, user, "", friendService{l.s}.AcceptFriend, &walletv1.AcceptFriendRequest{UserId: requester})
}

// RejectFriend is FriendService.RejectFriend.
func (l Local) RejectFriend(ctx context.Context, user, peer uint64) (*walletv1.RejectFriendResponse, error) {
	return runAs(ctx, user, "", friendService{l.s}.RejectFriend, &walletv1.RejectFriendRequest{UserId: peer})
}

// RemoveFriend is FriendService.RemoveFriend.
func (l Local) RemoveFriend(ctx context.Context, user, peer uint64) (*walletv1.RemoveFriendResponse, error) {
	return runAs(ctx, user, "", friendService{l.s}.RemoveFriend, &walletv1.RemoveFriendRequest{UserId: peer})
}

// GetFriendList is FriendService.GetFriendList.
func (l Local) GetFriendList(ctx context.Context, user uint64) (*walletv1.GetFriendListResponse, error) {
	return runAs(ctx, user, "", friendService{l.s}.GetFriendList, &walletv1.GetFriendListRequest{})
}

// GetChatFriendList is FriendService.GetChatFriendList.
func (l Local) GetChatFriendList(ctx context.Context, user uint64) (*walletv1.GetChatFriendListResponse, error) {
	return runAs(ctx, user, "", friendService{l.s}.GetChatFriendList, &walletv1.GetChatFriendListRequest{})
}

// SendMessage is ChatService.SendMessage.
func (l Local) SendMessage(ctx context.Context, user uint64, req *walletv1.SendMessageRequest) (*walletv1.SendMessageResponse, error) {
	return runAs(ctx, user, "", chatService{l.s}.SendMessage, req)
}

// MarkRead is ChatService.MarkRead.
func (l Local) MarkRead(ctx context.Context, user uint64, req *walletv1.MarkReadRequest) (*walletv1.MarkReadResponse, error) {
	return runAs(ctx, user, "", chatService{l.s}.MarkRead, req)
}

// GetMessagesAt is ChatService.GetMessages from the offset-th newest
// message of the conversation on (0: the newest).
func (l Local) GetMessagesAt(ctx context.Context, user, peer, offset uint64, limit int32) (*walletv1.GetMessagesResponse, error) {
	l.s.mu.RLock()
	var last uint64
	if c, ok := l.s.state.Conversation(social.UserID(user), social.UserID(peer)); ok {
		last = c.Last.Seq
	}
	l.s.mu.RUnlock()
	req := &walletv1.GetMessagesRequest{PeerId: peer, PageSize: limit}
	if offset > 0 {
		if offset >= last {
			if _, ok := l.s.user(social.UserID(peer)); ok && peer != user {
				return &walletv1.GetMessagesResponse{}, nil
			}
		} else {
			req.PageToken = pageToken(last + 1 - offset)
		}
	}
	return runAs(ctx, user, "", chatService{l.s}.GetMessages, req)
}

// Subscribe is ChatService.Subscribe: opened runs once the stream is
// registered, then send gets each event until ctx ends or send fails.
func (l Local) Subscribe(ctx context.Context, user uint64, opened func() error, send func(*walletv1.Event) error) error {
	return chatService{l.s}.Subscribe(
		context.WithValue(ctx, callInfoKey{}, &callInfo{user: social.UserID(user)}),
		&walletv1.SubscribeRequest{}, funcSender{opened, send})
}

type funcSender struct {
	open func() error
	send func(*walletv1.Event) error
}

func (f funcSender) Open() error                  { return f.open() }
func (f funcSender) Send(e *walletv1.Event) error { return f.send(e) }

// WatchPresence has watch called, under the service's lock (it must not
// block nor call the service), each time a user comes online or goes
// offline across the cluster (here: through a stream of this node), and
// reports true; on a single node it does nothing and reports false.
func (l Local) WatchPresence(watch func(user uint64, online, here bool)) bool {
	if l.s.presence == nil {
		return false
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	l.s.presence.watch = func(u social.UserID, online, here bool) { watch(uint64(u), online, here) }
	return true
}

// User returns user id, with their presence.
func (l Local) User(id uint64) (*walletv1.User, bool) {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	u, ok := l.s.state.User(social.UserID(id))
	if !ok {
		return nil, false
	}
	return l.s.userPB(u), true
}

// UserByName returns the user called username.
func (l Local) UserByName(username string) (*walletv1.User, bool) {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	u, ok := l.s.state.UserByName(username)
	if !ok {
		return nil, false
	}
	return l.s.userPB(u), true
}

// Relation is the friendship of user and peer as user sees it:
// STATUS_UNSPECIFIED when there is none.
func (l Local) Relation(user, peer uint64) walletv1.Friend_Status {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	r, ok := l.s.state.Relation(social.UserID(user), social.UserID(peer))
	if !ok {
		return walletv1.Friend_STATUS_UNSPECIFIED
	}
	return friendStatusPB[r.StatusFor(social.UserID(user))]
}

// SearchUsers returns at most limit users whose username or name contains
// q, ignoring case, by username.
func (l Local) SearchUsers(q string, limit int) []*walletv1.User {
	q = strings.ToLower(q)
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	var out []*walletv1.User
	for _, u := range l.s.state.Search(func(u *social.User) bool {
		return strings.Contains(strings.ToLower(u.Username), q) || strings.Contains(strings.ToLower(u.Name), q)
	}, limit) {
		out = append(out, l.s.userPB(u))
	}
	return out
}
