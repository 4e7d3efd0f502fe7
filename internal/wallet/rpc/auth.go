package rpc

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/timestamppb"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// callInfoKey is the context key of a call's callInfo.
type callInfoKey struct{}

// callInfo is what a method may know of its call beyond the request.
type callInfo struct {
	user social.UserID // the authenticated caller; 0 on public methods
	peer string        // the client's host:port
}

func infoOf(ctx context.Context) *callInfo {
	if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		return info
	}
	return &callInfo{}
}

// caller returns the user the call was authenticated as.
func caller(ctx context.Context) social.UserID { return infoOf(ctx).user }

// owner checks that a request's user_id field names the caller (0 means
// the caller) and returns the caller.
func owner(ctx context.Context, userID uint64) (social.UserID, error) {
	me := caller(ctx)
	if userID != 0 && social.UserID(userID) != me {
		return 0, errNotYours
	}
	return me, nil
}

// authService implements AuthService.
type authService struct{ *Service }

// Register creates the user and their wallet. Registrations are
// serialised from choosing the id to adding the user; the wallet is opened
// before the user record is written, so every durable user has a wallet
// (a crash in between leaves an empty wallet that the next registration,
// given the same id, takes over).
func (s authService) Register(ctx context.Context, m *walletv1.RegisterRequest) (*walletv1.RegisterResponse, error) {
	if !social.ValidPassword(m.Password) {
		return nil, invalid("password must be %d to %d bytes", social.MinPassword, social.MaxPassword)
	}
	s.mu.RLock()
	_, err := s.state.NewUser(social.User{Username: m.Username, Name: m.Name})
	s.mu.RUnlock()
	if err != nil {
		return nil, socialError(err) // fail fast, before the slow hash
	}
	hash, err := s.hasher.Hash(m.Password)
	if err != nil {
		return nil, s.internal("hash password", err)
	}
	u, err := s.addUser(ctx, social.User{Username: m.Username, Name: m.Name, PasswordHash: hash, CreatedAt: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	token, exp, err := s.signIn(u)
	if err != nil {
		return nil, err
	}
	return &walletv1.RegisterResponse{User: token.user, Token: token.token, ExpiresAt: exp}, nil
}

func (s authService) addUser(ctx context.Context, u social.User) (social.User, error) {
	if s.repl != nil {
		return s.proposeUser(ctx, u)
	}
	s.registering.Lock()
	defer s.registering.Unlock()
	s.mu.RLock()
	u, err := s.state.NewUser(u)
	s.mu.RUnlock()
	if err != nil {
		return social.User{}, socialError(err)
	}
	spec := ledger.AccountSpec{ID: walletID(u.ID), Currency: s.currency}
	if _, _, err := s.ledger.CreateAccount(context.WithoutCancel(ctx), spec); err != nil {
		return social.User{}, s.ledgerFailure("open wallet", err)
	}
	b := s.store.NewSocialBatch()
	b.PutUser(&u)
	if err := s.store.Commit(b.Batch); err != nil {
		return social.User{}, s.internal("write user", err)
	}
	s.mu.Lock()
	s.state.AddUser(u)
	s.mu.Unlock()
	return u, nil
}

// signedIn is a token and the user it was issued to, as sent.
type signedIn struct {
	token string
	user  *walletv1.User
}

func (s authService) signIn(u social.User) (signedIn, *timestamppb.Timestamp, error) {
	token, exp, err := s.tokens.Issue(uint64(u.ID), time.Now())
	if err != nil {
		return signedIn{}, nil, s.internal("sign token", err)
	}
	s.mu.RLock()
	pb := s.userPB(&u)
	s.mu.RUnlock()
	return signedIn{token: token, user: pb}, timestamppb.New(exp), nil
}

// Login checks the password, rate-limited per username and address.
func (s authService) Login(ctx context.Context, m *walletv1.LoginRequest) (*walletv1.LoginResponse, error) {
	u, err := s.checkPassword(ctx, m.Username, m.Password, errBadLogin)
	if err != nil {
		return nil, err
	}
	if s.repl != nil {
		if err := s.ensureWallet(ctx, u.ID); err != nil {
			return nil, err
		}
	}
	token, exp, err := s.signIn(u)
	if err != nil {
		return nil, err
	}
	return &walletv1.LoginResponse{User: token.user, Token: token.token, ExpiresAt: exp}, nil
}

// checkPassword returns the user called username if password is theirs,
// else wrong. Failures count against the login rate limit of the caller's
// address, cluster-wide in a cluster (countFailure).
func (s *Service) checkPassword(ctx context.Context, username, password string, wrong error) (social.User, error) {
	addr := clientAddr(ctx)
	if !s.limiter.Admit(username, addr) {
		return social.User{}, errTooManyLogins
	}
	s.mu.RLock()
	p, ok := s.state.UserByName(username)
	var u social.User
	if ok {
		u = *p
	}
	s.mu.RUnlock()
	if !ok || len(password) > social.MaxPassword || s.hasher.Check(u.PasswordHash, password) != nil {
		if err := s.countFailure(ctx, username, addr); err != nil {
			return social.User{}, err
		}
		return social.User{}, wrong
	}
	return u, nil
}

// countFailure counts a failed password attempt. A single node counts it
// at once. A cluster node appends it to the social log and returns once
// its own apply counted it (Apply): every node counts every
// node's failures, in the same limiter, so the limit is the single node's
// whichever nodes the attempts reach, and an attempt that begins after a
// failure was answered sees it (every call syncs first).
func (s *Service) countFailure(ctx context.Context, username, addr string) error {
	if s.repl == nil {
		s.limiter.Failed(username, addr)
		return nil
	}
	_, err := s.propose(context.WithoutCancel(ctx), &loginFailedOp{At: time.Now().UTC(), Login: auth.CountedName(username), Addr: addr})
	return err
}

// clientAddr is the host of the caller's address, the key of the
// per-address login limit.
func clientAddr(ctx context.Context) string {
	addr := infoOf(ctx).peer
	if p, ok := peer.FromContext(ctx); ok && addr == "" && p.Addr != nil {
		addr = p.Addr.String() // a grpc-go call
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
