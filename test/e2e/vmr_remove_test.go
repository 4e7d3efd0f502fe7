package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// TestVMRRemoveFriend: removing a friend as VMR's app does
// (SetFriendStatus REMOVE_FRIEND) unfriends both users, durably: the other
// user's WebSocket gets REMOVE_FRIEND with the remover's id, both friend
// lists drop the pair, both chat lists keep the conversation as
// UNFRIENDED, texts are refused (a WebSocket CHAT is dropped, SendMessage
// is NOT_FRIENDS) while transfers still go through; after a restart it all
// still holds, the two can befriend again, and a removal through
// surge.wallet.v1's RemoveFriend reaches VMR's WebSocket too, as VMR's
// reaches surge.wallet.v1's Subscribe.
func TestVMRRemoveFriend(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, walletArgs...)
	v := vmrTransports(t, srv.url)["grpc-web"]
	a, b, c := vmrRegister(t, srv.url, "rmalice"), vmrRegister(t, srv.url, "rmbob"), vmrRegister(t, srv.url, "rmcarol")
	befriendVMR(t, v, a, b)
	wa, wb := vmrSocketReady(t, srv.url, a), vmrSocketReady(t, srv.url, b)
	sendChat(t, wa, b, "hi bob")
	chatOf(t, wb, "CHAT")
	chatOf(t, wa, "SEND_BACK")
	w := newWalletClients(t, srv.url)
	stream, cancel := subscribeAs(t, w, a.token)

	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_REMOVE_FRIEND, a); e != nil {
		t.Fatalf("remove: %v", e)
	}
	wantSocketEvent(t, wa, "REMOVE_FRIEND", fmt.Sprintf(`{"userId":%d}`, b.id))
	if !stream.Receive() || stream.Msg().GetFriend().GetUser().GetId() != b.id || stream.Msg().GetFriend().GetStatus() != walletv1.Friend_UNFRIENDED {
		t.Errorf("a's surge.wallet.v1 stream: %v %v, want b UNFRIENDED", stream.Msg(), stream.Err())
	}
	cancel()
	wantUnfriended(t, v, a, b, "hi bob")
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_REMOVE_FRIEND, b); e != nil {
		t.Errorf("removing a removed friend again: %v", e)
	}

	sendChat(t, wa, b, "are you there?") // dropped: not friends
	fundWallet(t, srv.c, member{id: a.id}, 5000)
	if e := transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: int64(b.id), Amount: 1000, Password: "password1"}); e != nil {
		t.Fatalf("transfer to a former friend: %v", e)
	}
	// The next thing each socket hears is the transfer: b heard nothing of
	// its own removal, a's text was not sent.
	if m := chatIn(t, nextEvent(t, wb)); m.Type != "TRANSFER" {
		t.Errorf("b's next message %+v, want the transfer", m)
	}
	if m := nextEvent(t, wa); m.Type != "SEND_BACK" || chatIn(t, m).Type != "TRANSFER" {
		t.Errorf("a's next message %s %s, want the transfer's SEND_BACK", m.Type, m.Data)
	}

	_, err := w.chat.SendMessage(ctxT(t), withToken(a.token, &walletv1.SendMessageRequest{ToUserId: b.id, Text: "hello?"}))
	wantCode(t, "SendMessage to a former friend", err, connect.CodeFailedPrecondition)
	_, err = w.friend.RemoveFriend(ctxT(t), withToken(a.token, &walletv1.RemoveFriendRequest{UserId: c.id}))
	if wantCode(t, "RemoveFriend of a stranger", err, connect.CodeFailedPrecondition); reasonOf(err) != "NOT_FRIENDS" {
		t.Errorf("RemoveFriend of a stranger: reason %q", reasonOf(err))
	}
	wantVMRError(t, "REMOVE_FRIEND of a stranger", setStatus(t, v, a, vmrpb.SetFriendStatusRequest_REMOVE_FRIEND, c), vmrpb.ErrorCode_FAILUE)
	cf, err := w.friend.GetChatFriendList(ctxT(t), withToken(a.token, &walletv1.GetChatFriendListRequest{}))
	if err != nil || len(cf.Msg.Friends) != 1 || cf.Msg.Friends[0].Status != walletv1.Friend_UNFRIENDED {
		t.Errorf("surge's chat list of a: %v %v", cf, err)
	}

	wa.Close(websocket.StatusNormalClosure, "")
	wb.Close(websocket.StatusNormalClosure, "")
	srv.stop()
	srv = start(t, dir, walletArgs...)
	v = vmrTransports(t, srv.url)["grpc-web-text"]
	wantUnfriended(t, v, a, b, "1000;")

	w = newWalletClients(t, srv.url)
	wa, wb = vmrSocketReady(t, srv.url, a), vmrSocketReady(t, srv.url, b)
	if _, err := w.friend.AddFriend(ctxT(t), withToken(a.token, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: b.id}})); err != nil {
		t.Fatalf("asking a former friend again: %v", err)
	}
	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a); e != nil {
		t.Fatalf("accept: %v", e)
	}
	wantSocketEvent(t, wa, "ACCEPT", fmt.Sprintf(`{"userId":%d}`, b.id))
	res, err := w.friend.RemoveFriend(ctxT(t), withToken(a.token, &walletv1.RemoveFriendRequest{UserId: b.id}))
	if err != nil || res.Msg.Friend.GetStatus() != walletv1.Friend_UNFRIENDED || res.Msg.Friend.GetUser().GetId() != b.id {
		t.Fatalf("RemoveFriend: %v %v", res, err)
	}
	wantSocketEvent(t, wb, "REMOVE_FRIEND", fmt.Sprintf(`{"userId":%d}`, a.id))
	wantUnfriended(t, v, a, b, "1000;")
}

// befriendVMR makes a and b friends through VMR's SetFriendStatus.
func befriendVMR(t *testing.T, v vmrClients, a, b vmrUser) {
	t.Helper()
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ADD_FRIEND, b); e != nil {
		t.Fatal(e)
	}
	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a); e != nil {
		t.Fatal(e)
	}
}

// wantSocketEvent checks c's next message but presence.
func wantSocketEvent(t *testing.T, c *websocket.Conn, typ, data string) {
	t.Helper()
	if m := nextEvent(t, c); m.Type != typ || string(m.Data) != data {
		t.Errorf("message %s %s, want %s %s", m.Type, m.Data, typ, data)
	}
}

// chatIn decodes a WebSocket message's chat message.
func chatIn(t *testing.T, m wsMessage) wsChat {
	t.Helper()
	var c wsChat
	if err := json.Unmarshal(m.Data, &c); err != nil {
		t.Fatalf("%s: %v", m.Data, err)
	}
	return c
}

// wantUnfriended checks that a and b see each other as VMR's app shows
// former friends: out of the friend list, in the chat list as UNFRIENDED
// with their newest message last.
func wantUnfriended(t *testing.T, v vmrClients, a, b vmrUser, last string) {
	t.Helper()
	for _, p := range [][2]vmrUser{{a, b}, {b, a}} {
		if got := friendStatus(t, v, p[0], p[1]); got != vmrpb.FriendStatus_NOTHING {
			t.Errorf("%s's friend list shows %s as %v", p[0].username, p[1].username, got)
		}
		cf, err := v.friend.GetChatFriendList(ctxT(t), vmrReq(p[0].token, &vmrpb.Empty{}))
		if err != nil || len(cf.Msg.FriendInfo) != 1 {
			t.Fatalf("%s's chat list: %v %v", p[0].username, cf, err)
		}
		if f := cf.Msg.FriendInfo[0]; f.Id != int64(p[1].id) || f.FriendStatus != vmrpb.FriendStatus_UNFRIENDED || f.LastMessage != last {
			t.Errorf("%s's chat list: %v, want %s UNFRIENDED, last %q", p[0].username, f, p[1].username, last)
		}
	}
}

// subscribeAs opens surge.wallet.v1's Subscribe as the token's user and
// returns once the server has the stream open; cancel ends it.
func subscribeAs(t *testing.T, w *walletClients, token string) (stream *connect.ServerStreamForClient[walletv1.Event], cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)
	stream, err := w.chat.Subscribe(ctx, withToken(token, &walletv1.SubscribeRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.ResponseHeader()
	return stream, cancel
}
