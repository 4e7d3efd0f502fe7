package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// The wallet, friends and chat answer on every node of a cluster as on a
// single node: users registered on one node log in on another, a
// username is taken cluster-wide, friends and messages made on two nodes
// reach a Subscribe stream open on a third live and in order, and a VMR
// WebSocket on a node that did not take the call; a transfer's TRANSFER
// message is written once, its retry on another node is a replay, and the
// balances read alike on every node; failed logins are limited
// cluster-wide. A node killed with kill -9 and restarted serves all of it
// again, from its own copy and the log's tail, or from the whole log when
// its copy is gone; streams get new events.
func TestClusterWallet(t *testing.T) {
	c := startCluster(t, 1, 3, walletArgs...)
	w := make([]*walletClients, 3)
	for i, s := range c.nodes {
		w[i] = newWalletClients(t, s.url)
	}
	alice, bob := w[0].register(t, "alice"), w[0].register(t, "bob")
	_, err := w[1].auth.Register(ctxT(t), connect.NewRequest(&walletv1.RegisterRequest{Username: alice.username, Name: "Copy", Password: "password1"}))
	wantCode(t, "alice's username again, on another node", err, connect.CodeAlreadyExists)
	login, err := w[1].auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: bob.username, Password: "password1"}))
	if err != nil || login.Msg.User.Id != bob.id {
		t.Fatalf("bob logs in on node 2: %v %v", login, err)
	}
	bob.token = login.Msg.Token // signed by node 2, good on node 3
	wantLoginLimitClusterWide(t, w, "nobody-"+alice.username)

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := w[2].chat.Subscribe(ctx, as(bob, &walletv1.SubscribeRequest{}))
	if err != nil {
		t.Fatalf("bob subscribes on node 3: %v", err)
	}
	_ = stream.ResponseHeader()
	ws := vmrSocketReady(t, c.nodes[2].url, vmrUser(bob))

	if _, err := w[0].friend.AddFriend(ctxT(t), as(alice, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_Username{Username: bob.username}})); err != nil {
		t.Fatalf("alice adds bob on node 1: %v", err)
	}
	if !stream.Receive() || stream.Msg().GetFriend().GetUser().GetId() != alice.id || stream.Msg().GetFriend().GetStatus() != walletv1.Friend_NOT_ANSWER {
		t.Fatalf("bob's stream on node 3, after alice's request: %v %v", stream.Msg(), stream.Err())
	}
	if _, err := w[1].friend.AcceptFriend(ctxT(t), as(bob, &walletv1.AcceptFriendRequest{UserId: alice.id})); err != nil {
		t.Fatalf("bob accepts on node 2: %v", err)
	}
	wantPresence(t, w[0], c.nodes[0].url, ws, alice, bob)
	fundWallet(t, c.nodes[1].c, alice, 1000)

	var want []string
	say := func(node int, from, to member, text string) {
		t.Helper()
		res, err := w[node].chat.SendMessage(ctxT(t), as(from, &walletv1.SendMessageRequest{ToUserId: to.id, Text: text}))
		if err != nil {
			t.Fatalf("%s says %q on node %d: %v", from.username, text, node+1, err)
		}
		want = append(want, describe(res.Msg.Message))
	}
	say(0, alice, bob, "hello from node 1")
	if got := chatOf(t, ws, "CHAT"); got.Message != "hello from node 1" || got.SenderID != int64(alice.id) {
		t.Errorf("bob's WebSocket on node 3: %+v", got)
	}
	say(1, bob, alice, "hello from node 2")
	transfer := &walletv1.TransferRequest{RequestId: "cw-1", ToUserId: bob.id, Amount: 300, Message: "rent"}
	tr, err := w[1].wallet.Transfer(ctxT(t), as(alice, transfer))
	if err != nil || tr.Msg.Replayed {
		t.Fatalf("alice pays bob on node 2: %v %v", tr, err)
	}
	want = append(want, fmt.Sprintf("TRANSFER %d->%d 300 rent", alice.id, bob.id))
	again, err := w[0].wallet.Transfer(ctxT(t), as(alice, transfer))
	if err != nil || !again.Msg.Replayed || again.Msg.TransferId != tr.Msg.TransferId {
		t.Fatalf("the same transfer again, on node 1: %v %v", again, err)
	}
	say(2, alice, bob, "after the money")
	c.wantStream(t, stream, want)

	c.wantWallet(t, w, alice, bob, want)
	w[1] = c.restart(t, 1, false)
	c.wantWallet(t, w, alice, bob, want)
	say(1, bob, alice, "back on node 2")
	c.wantStream(t, stream, want[len(want)-1:])
	w[0] = c.restart(t, 0, true)
	c.wantWallet(t, w, alice, bob, want)
	for _, text := range []string{"hello from node 2", "back on node 2"} { // bob's own, before and after the restart
		if got := chatOf(t, ws, "SEND_BACK"); got.Message != text {
			t.Errorf("bob's WebSocket on node 3: %+v, want %q", got, text)
		}
	}
	ws.Close(websocket.StatusNormalClosure, "")
}

// wantLoginLimitClusterWide floods logins at username with a wrong
// password, spread over the nodes, and checks that they are limited as on
// one node: the burst of failures runs (auth.DefaultLimit: 10), then the
// attempts are refused, but for one more per 6 s of the flood's length.
// Counted per node, each node would run its own burst.
func wantLoginLimitClusterWide(t *testing.T, w []*walletClients, username string) {
	t.Helper()
	const burst, attempts = 10, 30
	start := time.Now()
	admitted := 0
	for i := range attempts {
		_, err := w[i%len(w)].auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: username, Password: "wrong-password"}))
		switch connect.CodeOf(err) {
		case connect.CodeUnauthenticated:
			admitted++
		case connect.CodeResourceExhausted:
		default:
			t.Fatalf("failed login %d on node %d: %v", i+1, i%len(w)+1, err)
		}
	}
	if allowed := burst + int(time.Since(start)/(6*time.Second)); admitted < burst || admitted > allowed {
		t.Fatalf("%d of %d failed logins over %d nodes ran; want %d to %d", admitted, attempts, len(w), burst, allowed)
	}
}

// wantPresence checks that presence is cluster-wide: bob, whose streams
// are open on node 3, shows online in alice's friend list read on node 1
// (n1); a VMR WebSocket of alice's opened on node 1 is announced ONLINE on
// bob's on node 3 (bobWS), and OFFLINE once it closes.
func wantPresence(t *testing.T, n1 *walletClients, url1 string, bobWS *websocket.Conn, alice, bob member) {
	t.Helper()
	list, err := n1.friend.GetFriendList(ctxT(t), as(alice, &walletv1.GetFriendListRequest{}))
	if err != nil || len(list.Msg.Friends) != 1 || !list.Msg.Friends[0].User.Online {
		t.Fatalf("alice's friend list on node 1 while bob's streams are open on node 3: %v %v", list, err)
	}
	aliceID := strconv.FormatUint(alice.id, 10)
	aliceWS := vmrSocketReady(t, url1, vmrUser(alice))
	if got := string(nextOf(t, bobWS, "ONLINE")); got != aliceID {
		t.Errorf("bob's WebSocket on node 3 after alice's opened on node 1: ONLINE %s, want %s", got, aliceID)
	}
	aliceWS.Close(websocket.StatusNormalClosure, "")
	if got := string(nextOf(t, bobWS, "OFFLINE")); got != aliceID {
		t.Errorf("bob's WebSocket on node 3 after alice's closed on node 1: OFFLINE %s, want %s", got, aliceID)
	}
}

// restart kills node i with kill -9 and starts it again on its data
// directory, without its copy of the social state if lose, and returns
// wallet clients of it.
func (c *clusterNodes) restart(t *testing.T, i int, lose bool) *walletClients {
	t.Helper()
	c.alive[i].Store(false)
	c.nodes[i].kill()
	if lose {
		if err := os.RemoveAll(filepath.Join(c.dirs[i], "social")); err != nil {
			t.Fatal(err)
		}
	}
	c.nodes[i] = start(t, c.dirs[i], c.args...)
	c.nodes[i].pollReady(fmt.Sprintf("node %d ready after its restart", i+1))
	c.alive[i].Store(true)
	return newWalletClients(t, c.nodes[i].url)
}

// wantStream reads the stream's next messages and checks them.
func (c *clusterNodes) wantStream(t *testing.T, stream *connect.ServerStreamForClient[walletv1.Event], want []string) {
	t.Helper()
	for i, w := range want {
		if !stream.Receive() {
			t.Fatalf("stream ended after %d events: %v", i, stream.Err())
		}
		if got := describe(stream.Msg().GetMessage()); got != w {
			t.Errorf("event %d: %s, want %s", i, got, w)
		}
	}
}

// wantWallet checks, on every node, alice's and bob's balances and
// conversation (want, oldest first: one TRANSFER message), and their
// friendship.
func (c *clusterNodes) wantWallet(t *testing.T, w []*walletClients, alice, bob member, want []string) {
	t.Helper()
	for i := range w {
		if a, b := w[i].balance(t, alice), w[i].balance(t, bob); a != 700 || b != 300 {
			t.Errorf("node %d: balances %d and %d, want 700 and 300", i+1, a, b)
		}
		var got []string
		for _, m := range w[i].messages(t, bob, alice.id) {
			got = append(got, describe(m))
		}
		slices.Reverse(got)
		if !slices.Equal(got, want) {
			t.Errorf("node %d: conversation\n%v\nwant\n%v", i+1, got, want)
		}
		fl, err := w[i].friend.GetChatFriendList(ctxT(t), as(alice, &walletv1.GetChatFriendListRequest{}))
		if err != nil || len(fl.Msg.Friends) != 1 || fl.Msg.Friends[0].Status != walletv1.Friend_FRIEND || fl.Msg.Friends[0].User.Id != bob.id {
			t.Errorf("node %d: alice's chat friends %v %v", i+1, fl, err)
		}
	}
}
