package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/reflect/protoreflect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestWalletReflectionAndHealth: with no .proto at hand, a gRPC client
// discovers the services by reflection and checks health.
func TestWalletReflectionAndHealth(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	stream := grpcreflect.NewClient(w.http, srv.url, connect.WithGRPC()).NewStream(ctxT(t))
	defer stream.Close()
	names, err := stream.ListServices()
	if err != nil {
		t.Fatalf("ListServices: %v", err)
	}
	for _, want := range []string{"surge.wallet.v1.AuthService", "surge.wallet.v1.WalletService",
		"surge.wallet.v1.FriendService", "surge.wallet.v1.ChatService", "grpc.health.v1.Health"} {
		if !slices.ContainsFunc(names, func(n protoreflect.FullName) bool { return string(n) == want }) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
	fd, err := stream.FileContainingSymbol("surge.wallet.v1.WalletService")
	if err != nil || len(fd) == 0 {
		t.Fatalf("FileContainingSymbol(WalletService): %v (%d files)", err, len(fd))
	}

	health := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		w.http, srv.url+"/grpc.health.v1.Health/Check", connect.WithGRPC())
	for _, svc := range []string{"", "surge.wallet.v1.WalletService"} {
		res, err := health.CallUnary(ctxT(t), connect.NewRequest(&healthpb.HealthCheckRequest{Service: svc}))
		if err != nil || res.Msg.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %v %v, want SERVING", svc, res, err)
		}
	}
	_, err = health.CallUnary(ctxT(t), connect.NewRequest(&healthpb.HealthCheckRequest{Service: "no.such.Service"}))
	wantCode(t, "health of an unknown service", err, connect.CodeNotFound)
}

// TestWalletTransferAndChat walks the app: friends, a transfer shown in
// both histories and in the pair's chat as a TRANSFER message, text
// messages, the chat friend list's order and unread counts, MarkRead, and
// Transfer's idempotency.
func TestWalletTransferAndChat(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	alice, bob, carol := w.register(t, "alice"), w.register(t, "bob"), w.register(t, "carol")
	w.befriend(t, alice, bob)
	w.befriend(t, alice, carol)
	fundWallet(t, srv.c, alice, 1000)

	req := &walletv1.TransferRequest{RequestId: "lunch-1", ToUserId: bob.id, Amount: 250, Message: "lunch"}
	res, err := w.wallet.Transfer(ctxT(t), as(alice, req))
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if res.Msg.Replayed || res.Msg.Amount != 250 {
		t.Errorf("transfer reply %v", res.Msg)
	}
	if a, b := w.balance(t, alice), w.balance(t, bob); a != 750 || b != 250 {
		t.Errorf("balances after transfer: alice %d bob %d, want 750 and 250", a, b)
	}
	// The same request again is a replay; the same id with another amount
	// a conflict. Neither moves money.
	again, err := w.wallet.Transfer(ctxT(t), as(alice, req))
	if err != nil || !again.Msg.Replayed || again.Msg.TransferId != res.Msg.TransferId {
		t.Errorf("replay: %v %v, want the first transfer, replayed", again, err)
	}
	_, err = w.wallet.Transfer(ctxT(t), as(alice, &walletv1.TransferRequest{RequestId: "lunch-1", ToUserId: bob.id, Amount: 300}))
	wantCode(t, "same request_id, other amount", err, connect.CodeAlreadyExists)
	if w.balance(t, alice) != 750 {
		t.Errorf("replay or conflict moved money")
	}

	sent, got := w.history(t, alice), w.history(t, bob)
	if len(sent) != 2 || sent[0].Type != walletv1.HistoryItem_SEND || sent[0].CounterpartUserId != bob.id ||
		sent[0].CounterpartUsername != bob.username || sent[0].Amount != 250 || sent[0].BalanceAfter != 750 || sent[0].Message != "lunch" {
		t.Errorf("alice's history %v, want SEND 250 to bob (balance 750) above the funding", sent)
	}
	if sent[1].Type != walletv1.HistoryItem_RECEIVE || sent[1].CounterpartAccount != "@world" || sent[1].CounterpartUserId != 0 {
		t.Errorf("alice's funding entry %v", sent[1])
	}
	if len(got) != 1 || got[0].Type != walletv1.HistoryItem_RECEIVE || got[0].CounterpartUserId != alice.id || got[0].BalanceAfter != 250 {
		t.Errorf("bob's history %v, want RECEIVE 250 from alice", got)
	}

	// Chat: the transfer is message 1 of the pair; then two texts.
	if _, err := w.chat.SendMessage(ctxT(t), as(bob, &walletv1.SendMessageRequest{ToUserId: alice.id, Text: "thanks!"})); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := w.chat.SendMessage(ctxT(t), as(carol, &walletv1.SendMessageRequest{ToUserId: alice.id, Text: "hi alice"})); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := w.chat.SendMessage(ctxT(t), as(carol, &walletv1.SendMessageRequest{ToUserId: alice.id, Text: "are you there?"})); err != nil {
		t.Fatalf("send: %v", err)
	}
	conv := w.messages(t, alice, bob.id)
	if len(conv) != 2 || conv[0].Text != "thanks!" || conv[0].Id != 2 || conv[1].Type != walletv1.Message_TRANSFER ||
		conv[1].Amount != 250 || conv[1].Text != "lunch" || conv[1].TransferId != res.Msg.TransferId || conv[1].FromUserId != alice.id {
		t.Errorf("alice-bob conversation %v, want the TRANSFER then bob's text", conv)
	}

	// Carol wrote last, so she comes first, with 2 unread; bob has 1.
	list := w.chatList(t, alice)
	if len(list) != 2 || list[0].User.Id != carol.id || list[0].UnreadCount != 2 || list[0].LastMessage.GetText() != "are you there?" ||
		list[1].User.Id != bob.id || list[1].UnreadCount != 1 || list[1].LastMessage.GetText() != "thanks!" {
		t.Errorf("chat friend list %v", list)
	}
	// Bob sees the transfer he received as unread, his own text as read.
	if bl := w.chatList(t, bob); len(bl) != 1 || bl[0].UnreadCount != 1 {
		t.Errorf("bob's chat list %v, want alice with 1 unread (the transfer)", bl)
	}
	// Read up to carol's first message, then all.
	mr, err := w.chat.MarkRead(ctxT(t), as(alice, &walletv1.MarkReadRequest{PeerId: carol.id, UpToMessageId: 1}))
	if err != nil || mr.Msg.UnreadCount != 1 {
		t.Errorf("MarkRead up to 1: %v %v, want 1 unread", mr, err)
	}
	mr, err = w.chat.MarkRead(ctxT(t), as(alice, &walletv1.MarkReadRequest{PeerId: carol.id}))
	if err != nil || mr.Msg.UnreadCount != 0 {
		t.Errorf("MarkRead all: %v %v, want 0 unread", mr, err)
	}
	if list := w.chatList(t, alice); list[0].UnreadCount != 0 || list[1].UnreadCount != 1 {
		t.Errorf("after MarkRead: %v", list)
	}

	friends, err := w.friend.GetFriendList(ctxT(t), as(alice, &walletv1.GetFriendListRequest{}))
	if err != nil || len(friends.Msg.Friends) != 2 || friends.Msg.Friends[0].Status != walletv1.Friend_FRIEND {
		t.Errorf("friend list %v %v", friends, err)
	}
}

// TestWalletFriendRequests covers WAITING, NOT_ANSWER, reject and accept.
func TestWalletFriendRequests(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	a, b, c := w.register(t, "fa"), w.register(t, "fb"), w.register(t, "fc")
	if _, err := w.friend.AddFriend(ctxT(t), as(a, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_Username{Username: b.username}})); err != nil {
		t.Fatalf("add by username: %v", err)
	}
	if _, err := w.friend.AddFriend(ctxT(t), as(c, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: b.id}})); err != nil {
		t.Fatalf("add by id: %v", err)
	}
	if s := w.statuses(t, a); s[b.id] != walletv1.Friend_WAITING {
		t.Errorf("a sees b as %v, want WAITING", s[b.id])
	}
	if s := w.statuses(t, b); s[a.id] != walletv1.Friend_NOT_ANSWER || s[c.id] != walletv1.Friend_NOT_ANSWER {
		t.Errorf("b sees %v, want NOT_ANSWER from a and c", s)
	}
	if _, err := w.friend.RejectFriend(ctxT(t), as(b, &walletv1.RejectFriendRequest{UserId: c.id})); err != nil {
		t.Fatalf("reject: %v", err)
	}
	if _, err := w.friend.AcceptFriend(ctxT(t), as(b, &walletv1.AcceptFriendRequest{UserId: a.id})); err != nil {
		t.Fatalf("accept: %v", err)
	}
	if s := w.statuses(t, b); len(s) != 1 || s[a.id] != walletv1.Friend_FRIEND {
		t.Errorf("b's list %v, want only a, as FRIEND", s)
	}
	if s := w.statuses(t, c); len(s) != 0 {
		t.Errorf("c's list %v after the rejection, want empty", s)
	}
	_, err := w.friend.AcceptFriend(ctxT(t), as(b, &walletv1.AcceptFriendRequest{UserId: c.id}))
	wantCode(t, "accept without a request", err, connect.CodeFailedPrecondition)
	_, err = w.friend.AddFriend(ctxT(t), as(a, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: b.id}}))
	wantCode(t, "add an existing friend", err, connect.CodeAlreadyExists)
	// Two requests that cross make friends.
	if _, err := w.friend.AddFriend(ctxT(t), as(c, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: a.id}})); err != nil {
		t.Fatal(err)
	}
	res, err := w.friend.AddFriend(ctxT(t), as(a, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: c.id}}))
	if err != nil || res.Msg.Friend.Status != walletv1.Friend_FRIEND {
		t.Errorf("crossing requests: %v %v, want FRIEND", res, err)
	}
}

func (w *walletClients) chatList(t testing.TB, m member) []*walletv1.ChatFriend {
	t.Helper()
	res, err := w.friend.GetChatFriendList(ctxT(t), as(m, &walletv1.GetChatFriendListRequest{}))
	if err != nil {
		t.Fatalf("chat friend list of %s: %v", m.username, err)
	}
	return res.Msg.Friends
}

func (w *walletClients) statuses(t testing.TB, m member) map[uint64]walletv1.Friend_Status {
	t.Helper()
	res, err := w.friend.GetFriendList(ctxT(t), as(m, &walletv1.GetFriendListRequest{}))
	if err != nil {
		t.Fatalf("friend list of %s: %v", m.username, err)
	}
	out := map[uint64]walletv1.Friend_Status{}
	for _, f := range res.Msg.Friends {
		out[f.User.Id] = f.Status
	}
	return out
}

// TestWalletOverEveryProtocol runs the same calls as gRPC over h2c (served
// by grpc-go), gRPC-Web and Connect JSON over HTTP/1.1 (served by
// connect-go): each authenticates, refuses with the same codes and
// reasons, and streams.
func TestWalletOverEveryProtocol(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	protocols := map[string]*walletClients{
		"grpc":     newWalletClients(t, srv.url),
		"grpc-web": newWalletClientsWith(t, srv.url, &http.Client{Transport: &http.Transport{}}, connect.WithGRPCWeb()),
		"connect":  newWalletClientsWith(t, srv.url, &http.Client{Transport: &http.Transport{}}, connect.WithProtoJSON()),
	}
	for name, w := range protocols {
		t.Run(name, func(t *testing.T) {
			a, b := w.register(t, name+"-a"), w.register(t, name+"-b")
			w.befriend(t, a, b)
			fundWallet(t, srv.c, a, 100)

			stream, err := w.chat.Subscribe(ctxT(t), as(b, &walletv1.SubscribeRequest{}))
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			defer stream.Close()
			_ = stream.ResponseHeader() // the stream is open
			tr, err := w.wallet.Transfer(ctxT(t), as(a, &walletv1.TransferRequest{RequestId: "p1", ToUserId: b.id, Amount: 30, Message: "hi"}))
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			if !stream.Receive() {
				t.Fatalf("stream ended: %v", stream.Err())
			}
			if got, want := describe(stream.Msg().GetMessage()), fmt.Sprintf("TRANSFER %d->%d 30 hi", a.id, b.id); got != want {
				t.Errorf("streamed %s, want %s", got, want)
			}
			if tr.Msg.Amount != 30 || w.balance(t, a) != 70 || w.balance(t, b) != 30 {
				t.Errorf("after a transfer of 30: %d moved, balances %d and %d", tr.Msg.Amount, w.balance(t, a), w.balance(t, b))
			}

			_, err = w.wallet.Transfer(ctxT(t), as(a, &walletv1.TransferRequest{RequestId: "p2", ToUserId: b.id, Amount: 71}))
			wantCode(t, "overdraft", err, connect.CodeFailedPrecondition)
			if r := reasonOf(err); r != "INSUFFICIENT_FUNDS" {
				t.Errorf("overdraft reason %q, want INSUFFICIENT_FUNDS", r)
			}
			_, err = w.wallet.GetBalance(ctxT(t), connect.NewRequest(&walletv1.GetBalanceRequest{}))
			wantCode(t, "balance without a token", err, connect.CodeUnauthenticated)
			_, err = w.wallet.GetBalance(ctxT(t), as(a, &walletv1.GetBalanceRequest{UserId: b.id}))
			wantCode(t, "another user's balance", err, connect.CodePermissionDenied)
		})
	}
}

// TestWalletConcurrentTransfersOfOnePair: concurrent transfers between
// the same two users, one of which carries its message in the ledger's
// batch while the others find the pair locked and write theirs after
// (transfer.go), give each transfer exactly one TRANSFER message, numbered
// 1 to n without a gap, with the receiver's unread count n.
func TestWalletConcurrentTransfersOfOnePair(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	alice, bob := w.register(t, "alice"), w.register(t, "bob")
	w.befriend(t, alice, bob)
	fundWallet(t, srv.c, alice, 1000)

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := &walletv1.TransferRequest{RequestId: fmt.Sprintf("burst-%d", i), ToUserId: bob.id, Amount: 1}
			if _, err := w.wallet.Transfer(ctxT(t), as(alice, req)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("transfer: %v", err)
	}
	seen := map[string]bool{}
	msgs := w.messages(t, bob, alice.id)
	for i, m := range msgs {
		if want := uint64(len(msgs) - i); m.Id != want || m.Type != walletv1.Message_TRANSFER || seen[m.TransferId] {
			t.Fatalf("message %d of %d: id %d (want %d), type %v, transfer %q (seen before: %v)", i, len(msgs), m.Id, want, m.Type, m.TransferId, seen[m.TransferId])
		}
		seen[m.TransferId] = true
	}
	if len(seen) != n {
		t.Fatalf("%d TRANSFER messages, want %d", len(seen), n)
	}
	if list := w.chatList(t, bob); len(list) != 1 || list[0].UnreadCount != n {
		t.Fatalf("bob's chat list %v, want alice with %d unread", list, n)
	}
}
