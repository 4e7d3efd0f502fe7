package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/coder/websocket"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// TestVMRWebSocket: VMR's WebSocket protocol with a real client — ONLINE
// and OFFLINE, CHAT both ways with SEND_BACK to the sender, a transfer
// made over gRPC arriving as a TRANSFER chat message, ACCEPT to the
// requester, a message sent through surge.wallet.v1 arriving live, and the
// REST chat history of it all.
func TestVMRWebSocket(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	v := vmrTransports(t, srv.url)["grpc-web-text"]
	a, b, c := vmrRegister(t, srv.url, "wsalice"), vmrRegister(t, srv.url, "wsbob"), vmrRegister(t, srv.url, "wscarol")
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ADD_FRIEND, b); e != nil {
		t.Fatal(e)
	}
	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a); e != nil {
		t.Fatal(e)
	}

	if _, res, err := websocket.Dial(ctxT(t), "ws"+srv.url[4:]+"/ws?token=nonsense", nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token: %v %v, want 401", err, res)
	}
	wa := vmrSocket(t, srv.url, a.token)
	if got := string(nextOf(t, wa, "ONLINE")); got != strconv.FormatUint(a.id, 10) {
		t.Errorf("a's own ONLINE: %s", got) // VMR tells every socket, its own included
	}
	wb := vmrSocket(t, srv.url, b.token)
	if got := string(nextOf(t, wa, "ONLINE")); got != strconv.FormatUint(b.id, 10) {
		t.Errorf("ONLINE %s, want b %d", got, b.id)
	}
	cf, err := v.friend.GetChatFriendList(ctxT(t), vmrReq(a.token, &vmrpb.Empty{}))
	if err != nil || len(cf.Msg.FriendInfo) != 1 || !cf.Msg.FriendInfo[0].Online {
		t.Errorf("b online in a's chat list: %v %v", cf, err)
	}

	send := func(ws *websocket.Conn, to vmrUser, text string) { t.Helper(); sendChat(t, ws, to, text) }
	send(wa, b, "hi bob")
	want := func(m wsChat, from, to vmrUser, typ, text string) {
		t.Helper()
		if m.SenderID != int64(from.id) || m.ReceiverID != int64(to.id) || m.Type != typ || m.Message != text || m.ID == 0 || m.Timestamp == 0 {
			t.Errorf("message %+v, want %s %d->%d %q", m, typ, from.id, to.id, text)
		}
	}
	want(chatOf(t, wb, "CHAT"), a, b, "CHAT", "hi bob")
	want(chatOf(t, wa, "SEND_BACK"), a, b, "CHAT", "hi bob")
	send(wb, a, "hi alice")
	want(chatOf(t, wa, "CHAT"), b, a, "CHAT", "hi alice")
	want(chatOf(t, wb, "SEND_BACK"), b, a, "CHAT", "hi alice")
	send(wa, c, "not a friend") // dropped, as VMR did: a sees no SEND_BACK for it

	fundWallet(t, srv.c, member{id: a.id}, 5000)
	if e := transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 7, Receiver: int64(b.id), Amount: 1200, Message: "tickets", Password: "password1"}); e != nil {
		t.Fatal(e)
	}
	want(chatOf(t, wb, "CHAT"), a, b, "TRANSFER", "1200;tickets")
	want(chatOf(t, wa, "SEND_BACK"), a, b, "TRANSFER", "1200;tickets")

	w := newWalletClients(t, srv.url)
	if _, err := w.chat.SendMessage(ctxT(t), withToken(b.token, &walletv1.SendMessageRequest{ToUserId: a.id, Text: "via surge"})); err != nil {
		t.Fatal(err)
	}
	want(chatOf(t, wa, "CHAT"), b, a, "CHAT", "via surge")

	wc := vmrSocket(t, srv.url, c.token)
	if e := setStatus(t, v, c, vmrpb.SetFriendStatusRequest_ADD_FRIEND, a); e != nil {
		t.Fatal(e)
	}
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, c); e != nil {
		t.Fatal(e)
	}
	if got := string(nextOf(t, wc, "ACCEPT")); got != fmt.Sprintf(`{"userId":%d}`, a.id) {
		t.Errorf("ACCEPT %s", got)
	}

	page := vmrREST(t, srv.url, http.MethodGet, fmt.Sprintf("/api/protected/chat/%d/0", b.id), a.token, nil)
	var d struct {
		Messages  []wsChat `json:"messages"`
		NewOffset int64    `json:"newOffset"`
	}
	if err := json.Unmarshal(page.Data, &d); page.Status != 200 || err != nil || len(d.Messages) != 4 || d.NewOffset != 4 {
		t.Fatalf("chat page: %d %s", page.Status, page.Data)
	}
	want(d.Messages[0], a, b, "CHAT", "hi bob") // oldest first, as VMR's pages were
	want(d.Messages[2], a, b, "TRANSFER", "1200;tickets")
	want(d.Messages[3], b, a, "CHAT", "via surge")
	page = vmrREST(t, srv.url, http.MethodGet, fmt.Sprintf("/api/protected/chat/%d/3", b.id), a.token, nil)
	if err := json.Unmarshal(page.Data, &d); err != nil || len(d.Messages) != 1 || d.Messages[0].Message != "hi bob" || d.NewOffset != 4 {
		t.Errorf("chat page from offset 3: %s", page.Data)
	}

	wb.Close(websocket.StatusNormalClosure, "")
	if got := string(nextOf(t, wa, "OFFLINE")); got != strconv.FormatUint(b.id, 10) {
		t.Errorf("OFFLINE %s, want b", got)
	}
}
