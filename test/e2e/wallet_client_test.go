package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/gen/surge/wallet/v1/walletv1connect"
)

// walletArgs start a server whose password hashes are cheap (bcrypt's
// minimum cost), so that tests can register many users quickly.
var walletArgs = []string{"--bcrypt-cost", "4"}

// rpcTimeout bounds each test RPC; a healthy call takes milliseconds.
const rpcTimeout = 30 * time.Second

// h2cClient speaks HTTP/2 without TLS, as gRPC clients do.
func h2cClient() *http.Client {
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// walletClients are gRPC clients of the four services.
type walletClients struct {
	http   *http.Client
	url    string
	auth   walletv1connect.AuthServiceClient
	wallet walletv1connect.WalletServiceClient
	friend walletv1connect.FriendServiceClient
	chat   walletv1connect.ChatServiceClient
}

// newWalletClients speaks gRPC over HTTP/2 without TLS, which surge's
// grpc-go server answers.
func newWalletClients(t testing.TB, url string) *walletClients {
	return newWalletClientsWith(t, url, h2cClient(), connect.WithGRPC())
}

// newWalletClientsWith speaks the protocol opts choose over hc.
func newWalletClientsWith(t testing.TB, url string, hc *http.Client, opts ...connect.ClientOption) *walletClients {
	t.Cleanup(hc.CloseIdleConnections)
	return &walletClients{
		http:   hc,
		url:    url,
		auth:   walletv1connect.NewAuthServiceClient(hc, url, opts...),
		wallet: walletv1connect.NewWalletServiceClient(hc, url, opts...),
		friend: walletv1connect.NewFriendServiceClient(hc, url, opts...),
		chat:   walletv1connect.NewChatServiceClient(hc, url, opts...),
	}
}

// member is a registered user and their token.
type member struct {
	id       uint64
	username string
	token    string
}

// userSeq keeps usernames unique within a test binary run.
var userSeq atomic.Int64

// register registers a new user whose password is password1.
func (w *walletClients) register(t testing.TB, prefix string) member {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, userSeq.Add(1))
	res, err := w.auth.Register(ctxT(t), connect.NewRequest(&walletv1.RegisterRequest{Username: name, Name: "User " + name, Password: "password1"}))
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return member{id: res.Msg.User.Id, username: name, token: res.Msg.Token}
}

// befriend makes a and b friends.
func (w *walletClients) befriend(t testing.TB, a, b member) {
	t.Helper()
	if _, err := w.friend.AddFriend(ctxT(t), as(a, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: b.id}})); err != nil {
		t.Fatalf("%s adds %s: %v", a.username, b.username, err)
	}
	if _, err := w.friend.AcceptFriend(ctxT(t), as(b, &walletv1.AcceptFriendRequest{UserId: a.id})); err != nil {
		t.Fatalf("%s accepts %s: %v", b.username, a.username, err)
	}
}

// walletAccount is m's ledger account.
func walletAccount(m member) string { return "wallet:" + strconv.FormatUint(m.id, 10) }

// fundWallet moves amount from @world into m's wallet over the ledger API.
func fundWallet(t testing.TB, c *Client, m member, amount int64) {
	t.Helper()
	fund(t, c, walletAccount(m), amount)
}

func (w *walletClients) balance(t testing.TB, m member) int64 {
	t.Helper()
	res, err := w.wallet.GetBalance(ctxT(t), as(m, &walletv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatalf("balance of %s: %v", m.username, err)
	}
	return res.Msg.Balance
}

// history returns all of m's history, newest first, following page
// tokens, and checks its items are numbered from 1, the oldest, with no
// gaps.
func (w *walletClients) history(t testing.TB, m member) []*walletv1.HistoryItem {
	t.Helper()
	var items []*walletv1.HistoryItem
	tok := ""
	for {
		res, err := w.wallet.GetHistory(ctxT(t), as(m, &walletv1.GetHistoryRequest{PageSize: 100, PageToken: tok}))
		if err != nil {
			t.Fatalf("history of %s: %v", m.username, err)
		}
		items = append(items, res.Msg.Items...)
		if tok = res.Msg.NextPageToken; tok == "" {
			break
		}
	}
	for i, it := range items {
		if want := uint64(len(items) - i); it.Seq != want {
			t.Errorf("history of %s: item %d of %d has seq %d, want %d", m.username, i, len(items), it.Seq, want)
		}
	}
	return items
}

// messages returns the whole conversation of m with peer, newest first.
func (w *walletClients) messages(t testing.TB, m member, peer uint64) []*walletv1.Message {
	t.Helper()
	var out []*walletv1.Message
	tok := ""
	for {
		res, err := w.chat.GetMessages(ctxT(t), as(m, &walletv1.GetMessagesRequest{PeerId: peer, PageSize: 100, PageToken: tok}))
		if err != nil {
			t.Fatalf("messages of %s with %d: %v", m.username, peer, err)
		}
		out = append(out, res.Msg.Messages...)
		if tok = res.Msg.NextPageToken; tok == "" {
			return out
		}
	}
}

// as makes a request carrying m's token.
func as[T any](m member, msg *T) *connect.Request[T] {
	return withToken(m.token, msg)
}

func withToken[T any](token string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if token != "" {
		req.Header().Set("Authorization", "Bearer "+token)
	}
	return req
}

// ctxT is a context bounded by rpcTimeout and the test's life.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wantCode checks that err is a gRPC error with code.
func wantCode(t testing.TB, what string, err error, code connect.Code) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %v", what, code)
		return
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Errorf("%s: %v, want code %v", what, err, code)
	}
}

// reasonOf returns the google.rpc.ErrorInfo reason of err, if any.
func reasonOf(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if info, ok := v.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}
