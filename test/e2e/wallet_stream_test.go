package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestWalletStream: Subscribe delivers new messages and incoming transfers
// in the order they were acknowledged, and marks its user online while
// open.
func TestWalletStream(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	alice, bob, carol := w.register(t, "alice"), w.register(t, "bob"), w.register(t, "carol")
	w.befriend(t, alice, bob)
	w.befriend(t, carol, bob)
	fundWallet(t, srv.c, alice, 1000)

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := w.chat.Subscribe(ctx, as(bob, &walletv1.SubscribeRequest{}))
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	_ = stream.ResponseHeader() // returns once the server has the stream open
	if !w.online(t, alice, bob.id) {
		t.Errorf("bob is not online while subscribed")
	}

	// Each step is acknowledged before the next starts, so this is the
	// commit order; bob's stream must show exactly it.
	var want []string
	for i := range 3 {
		res, err := w.chat.SendMessage(ctxT(t), as(alice, &walletv1.SendMessageRequest{ToUserId: bob.id, Text: fmt.Sprintf("hello %d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, describe(res.Msg.Message))
		tr, err := w.wallet.Transfer(ctxT(t), as(alice, &walletv1.TransferRequest{RequestId: fmt.Sprintf("st-%d", i), ToUserId: bob.id, Amount: int64(10 + i), Message: "coffee"}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("TRANSFER %d->%d %d coffee", alice.id, bob.id, tr.Msg.Amount))
		res, err = w.chat.SendMessage(ctxT(t), as(carol, &walletv1.SendMessageRequest{ToUserId: bob.id, Text: fmt.Sprintf("from carol %d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, describe(res.Msg.Message))
	}
	res, err := w.chat.SendMessage(ctxT(t), as(bob, &walletv1.SendMessageRequest{ToUserId: alice.id, Text: "thanks"}))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, describe(res.Msg.Message))

	for i, wantEv := range want {
		if !stream.Receive() {
			t.Fatalf("stream ended after %d events: %v", i, stream.Err())
		}
		if got := describe(stream.Msg().GetMessage()); got != wantEv {
			t.Errorf("event %d: %s, want %s", i, got, wantEv)
		}
	}
	cancel()
	_ = stream.Close()
	poll(t, 10*time.Second, "bob offline after the stream closed", func() (bool, string) {
		return !w.online(t, alice, bob.id), "still online"
	})
}

// describe renders a message without its time, to compare sequences.
func describe(m *walletv1.Message) string {
	if m.GetType() == walletv1.Message_TRANSFER {
		return fmt.Sprintf("TRANSFER %d->%d %d %s", m.FromUserId, m.ToUserId, m.Amount, m.Text)
	}
	return fmt.Sprintf("TEXT %d->%d #%d %s", m.GetFromUserId(), m.GetToUserId(), m.GetId(), m.GetText())
}

// online reports whether viewer's friend list shows peer online.
func (w *walletClients) online(t testing.TB, viewer member, peer uint64) bool {
	t.Helper()
	res, err := w.friend.GetFriendList(ctxT(t), as(viewer, &walletv1.GetFriendListRequest{}))
	if err != nil {
		t.Fatalf("friend list: %v", err)
	}
	for _, f := range res.Msg.Friends {
		if f.User.Id == peer {
			return f.User.Online
		}
	}
	t.Fatalf("%d is not in %s's friend list", peer, viewer.username)
	return false
}

// isFriend reports whether viewer's friend list shows peer as FRIEND.
func (w *walletClients) isFriend(t testing.TB, viewer member, peer uint64) bool {
	t.Helper()
	return w.statuses(t, viewer)[peer] == walletv1.Friend_FRIEND
}
