package e2e

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestWalletBadInput: each malformed or impossible request gets its status
// code (and reason where the API promises one), and nothing changes.
func TestWalletBadInput(t *testing.T) {
	srv := start(t, t.TempDir(), append(walletArgs, "--wallet-min-amount", "10")...)
	w := newWalletClients(t, srv.url)
	alice, bob, stranger := w.register(t, "alice"), w.register(t, "bob"), w.register(t, "stranger")
	w.befriend(t, alice, bob)
	fundWallet(t, srv.c, alice, 1000)

	reg := func(username, name, password string) error {
		_, err := w.auth.Register(ctxT(t), connect.NewRequest(&walletv1.RegisterRequest{Username: username, Name: name, Password: password}))
		return err
	}
	wantCode(t, "empty username", reg("", "X", "password1"), connect.CodeInvalidArgument)
	wantCode(t, "upper-case username", reg("Alice2", "X", "password1"), connect.CodeInvalidArgument)
	wantCode(t, "duplicate username", reg(alice.username, "X", "password1"), connect.CodeAlreadyExists)
	wantCode(t, "empty name", reg("newuser", "", "password1"), connect.CodeInvalidArgument)
	wantCode(t, "short password", reg("newuser", "X", "short"), connect.CodeInvalidArgument)
	wantCode(t, "long password", reg("newuser", "X", strings.Repeat("p", 73)), connect.CodeInvalidArgument)

	transfer := func(req *walletv1.TransferRequest) error {
		_, err := w.wallet.Transfer(ctxT(t), as(alice, req))
		return err
	}
	cases := []struct {
		name   string
		req    *walletv1.TransferRequest
		code   connect.Code
		reason string
	}{
		{"negative amount", &walletv1.TransferRequest{RequestId: "b1", ToUserId: bob.id, Amount: -5}, connect.CodeInvalidArgument, ""},
		{"zero amount", &walletv1.TransferRequest{RequestId: "b2", ToUserId: bob.id}, connect.CodeInvalidArgument, ""},
		{"overflowing amount", &walletv1.TransferRequest{RequestId: "b3", ToUserId: bob.id, Amount: 1 << 62}, connect.CodeInvalidArgument, ""},
		{"below minimum", &walletv1.TransferRequest{RequestId: "b4", ToUserId: bob.id, Amount: 9}, connect.CodeInvalidArgument, "BELOW_MINIMUM"},
		{"unknown receiver", &walletv1.TransferRequest{RequestId: "b5", ToUserId: 999999, Amount: 10}, connect.CodeNotFound, "RECEIVER_NOT_FOUND"},
		{"self-transfer", &walletv1.TransferRequest{RequestId: "b6", ToUserId: alice.id, Amount: 10}, connect.CodeInvalidArgument, "SAME_ACCOUNT"},
		{"insufficient funds", &walletv1.TransferRequest{RequestId: "b7", ToUserId: bob.id, Amount: 1001}, connect.CodeFailedPrecondition, "INSUFFICIENT_FUNDS"},
		{"oversized message", &walletv1.TransferRequest{RequestId: "b8", ToUserId: bob.id, Amount: 10, Message: strings.Repeat("m", 513)}, connect.CodeInvalidArgument, ""},
		{"missing request_id", &walletv1.TransferRequest{ToUserId: bob.id, Amount: 10}, connect.CodeInvalidArgument, ""},
		{"bad request_id", &walletv1.TransferRequest{RequestId: "no spaces", ToUserId: bob.id, Amount: 10}, connect.CodeInvalidArgument, ""},
	}
	for _, c := range cases {
		err := transfer(c.req)
		wantCode(t, c.name, err, c.code)
		if c.reason != "" && reasonOf(err) != c.reason {
			t.Errorf("%s: reason %q, want %q", c.name, reasonOf(err), c.reason)
		}
	}

	send := func(from member, to uint64, text string) error {
		_, err := w.chat.SendMessage(ctxT(t), as(from, &walletv1.SendMessageRequest{ToUserId: to, Text: text}))
		return err
	}
	wantCode(t, "empty message", send(alice, bob.id, ""), connect.CodeInvalidArgument)
	wantCode(t, "oversized message", send(alice, bob.id, strings.Repeat("x", 4097)), connect.CodeInvalidArgument)
	err := send(alice, stranger.id, "hello")
	wantCode(t, "message to a non-friend", err, connect.CodeFailedPrecondition)
	if reasonOf(err) != "NOT_FRIENDS" {
		t.Errorf("message to a non-friend: reason %q, want NOT_FRIENDS", reasonOf(err))
	}
	wantCode(t, "message to nobody", send(alice, 999999, "hello"), connect.CodeNotFound)
	_, err = w.wallet.GetHistory(ctxT(t), as(alice, &walletv1.GetHistoryRequest{PageSize: 101}))
	wantCode(t, "page too large", err, connect.CodeInvalidArgument)
	_, err = w.wallet.GetHistory(ctxT(t), as(alice, &walletv1.GetHistoryRequest{PageToken: "garbage"}))
	wantCode(t, "bad page token", err, connect.CodeInvalidArgument)
	_, err = w.chat.MarkRead(ctxT(t), as(alice, &walletv1.MarkReadRequest{PeerId: stranger.id}))
	wantCode(t, "mark read without a conversation", err, connect.CodeNotFound)
	_, err = w.friend.AddFriend(ctxT(t), as(alice, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: alice.id}}))
	wantCode(t, "befriend yourself", err, connect.CodeInvalidArgument)

	// Nothing changed: balances, histories, conversations.
	if a, b := w.balance(t, alice), w.balance(t, bob); a != 1000 || b != 0 {
		t.Errorf("balances %d and %d, want 1000 and 0", a, b)
	}
	if h := w.history(t, alice); len(h) != 1 {
		t.Errorf("alice's history has %d entries, want only the funding", len(h))
	}
	if msgs := w.messages(t, alice, bob.id); len(msgs) != 0 {
		t.Errorf("conversation has %v, want nothing", msgs)
	}
	if msgs := w.messages(t, alice, stranger.id); len(msgs) != 0 {
		t.Errorf("conversation with the stranger has %v, want nothing", msgs)
	}
}
