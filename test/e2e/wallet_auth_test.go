package e2e

import (
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/golang-jwt/jwt/v5"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// testSecret is the token secret of the auth test's server, so the test
// can sign tokens as an attacker who knows it (expired) or does not
// (forged).
const testSecret = "0123456789abcdef0123456789abcdef-test"

func signToken(t *testing.T, secret string, user uint64, exp time.Time) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Issuer: "surge", Subject: strconv.FormatUint(user, 10), ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestWalletAuthorization: tokens are required and checked, and nobody
// reads or spends another user's wallet or reads their conversations.
func TestWalletAuthorization(t *testing.T) {
	srv := start(t, t.TempDir(), append(walletArgs, "--token-secret", testSecret)...)
	w := newWalletClients(t, srv.url)
	alice, bob, eve := w.register(t, "alice"), w.register(t, "bob"), w.register(t, "eve")
	w.befriend(t, alice, bob)
	fundWallet(t, srv.c, alice, 500)
	if _, err := w.chat.SendMessage(ctxT(t), as(alice, &walletv1.SendMessageRequest{ToUserId: bob.id, Text: "secret"})); err != nil {
		t.Fatal(err)
	}

	for name, tok := range map[string]string{
		"missing": "",
		"garbage": "not-a-token",
		"forged":  signToken(t, "another-secret-another-secret-123", alice.id, time.Now().Add(time.Hour)),
		"expired": signToken(t, testSecret, alice.id, time.Now().Add(-time.Minute)),
	} {
		_, err := w.wallet.GetBalance(ctxT(t), withToken(tok, &walletv1.GetBalanceRequest{}))
		wantCode(t, name+" token on GetBalance", err, connect.CodeUnauthenticated)
		_, err = w.wallet.Transfer(ctxT(t), withToken(tok, &walletv1.TransferRequest{RequestId: "x", ToUserId: bob.id, Amount: 1}))
		wantCode(t, name+" token on Transfer", err, connect.CodeUnauthenticated)
	}
	// A token the server would sign itself is accepted: the check above
	// refused the tokens for what was wrong with them.
	if _, err := w.wallet.GetBalance(ctxT(t), withToken(signToken(t, testSecret, alice.id, time.Now().Add(time.Hour)), &walletv1.GetBalanceRequest{})); err != nil {
		t.Errorf("well-signed token refused: %v", err)
	}

	ctx := ctxT(t)
	_, err := w.wallet.GetBalance(ctx, as(eve, &walletv1.GetBalanceRequest{UserId: alice.id}))
	wantCode(t, "eve reads alice's balance", err, connect.CodePermissionDenied)
	_, err = w.wallet.GetHistory(ctx, as(eve, &walletv1.GetHistoryRequest{UserId: alice.id}))
	wantCode(t, "eve reads alice's history", err, connect.CodePermissionDenied)
	_, err = w.wallet.Transfer(ctx, as(eve, &walletv1.TransferRequest{FromUserId: alice.id, RequestId: "steal", ToUserId: eve.id, Amount: 100}))
	wantCode(t, "eve spends alice's wallet", err, connect.CodePermissionDenied)
	_, err = w.chat.GetMessages(ctx, as(eve, &walletv1.GetMessagesRequest{UserId: alice.id, PeerId: bob.id}))
	wantCode(t, "eve reads alice's chat", err, connect.CodePermissionDenied)
	_, err = w.friend.GetFriendList(ctx, as(eve, &walletv1.GetFriendListRequest{UserId: alice.id}))
	wantCode(t, "eve reads alice's friends", err, connect.CodePermissionDenied)
	_, err = w.friend.GetChatFriendList(ctx, as(eve, &walletv1.GetChatFriendListRequest{UserId: alice.id}))
	wantCode(t, "eve reads alice's chat list", err, connect.CodePermissionDenied)
	// Eve's own conversation with bob is empty: she cannot see alice's.
	if msgs := w.messages(t, eve, bob.id); len(msgs) != 0 {
		t.Errorf("eve sees %v in her conversation with bob", msgs)
	}
	if w.balance(t, alice) != 500 {
		t.Errorf("alice's balance changed")
	}

	// Step-up confirmation: a wrong password refuses the transfer.
	_, err = w.wallet.Transfer(ctx, as(alice, &walletv1.TransferRequest{RequestId: "s1", ToUserId: bob.id, Amount: 10, Password: "wrong-password"}))
	wantCode(t, "step-up with a wrong password", err, connect.CodeUnauthenticated)
	if _, err := w.wallet.Transfer(ctx, as(alice, &walletv1.TransferRequest{RequestId: "s2", ToUserId: bob.id, Amount: 10, Password: "password1"})); err != nil {
		t.Errorf("step-up with the right password: %v", err)
	}
	if w.balance(t, alice) != 490 {
		t.Errorf("alice's balance %d, want 490 (only the confirmed transfer)", w.balance(t, alice))
	}
}

// TestWalletLogin: right and wrong passwords, and the rate limit on
// failures.
func TestWalletLogin(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	m := w.register(t, "login")
	res, err := w.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: m.username, Password: "password1"}))
	if err != nil || res.Msg.User.Id != m.id {
		t.Fatalf("login: %v %v", res, err)
	}
	if _, err := w.wallet.GetBalance(ctxT(t), withToken(res.Msg.Token, &walletv1.GetBalanceRequest{})); err != nil {
		t.Errorf("login token refused: %v", err)
	}
	_, err = w.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: "nobody", Password: "password1"}))
	wantCode(t, "unknown user", err, connect.CodeUnauthenticated)
	// Ten failures in a row are allowed, then the limit refuses even the
	// right password for a while.
	var limited error
	for range 12 {
		_, err = w.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: m.username, Password: "guess-guess"}))
		if connect.CodeOf(err) == connect.CodeResourceExhausted {
			limited = err
			break
		}
		wantCode(t, "wrong password", err, connect.CodeUnauthenticated)
	}
	if limited == nil {
		t.Fatalf("12 wrong passwords were never rate-limited")
	}
	_, err = w.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: m.username, Password: "password1"}))
	wantCode(t, "right password while limited", err, connect.CodeResourceExhausted)
}
