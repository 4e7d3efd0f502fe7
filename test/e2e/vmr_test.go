package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// TestVMRREST: VMR chat's REST routes, their JSON shapes, status codes and
// response codes, and logout refusing the token everywhere after.
func TestVMRREST(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	u := vmrRegister(t, srv.url, "rest")
	post := func(path string, body any) restReply { return vmrREST(t, srv.url, http.MethodPost, path, "", body) }

	cases := []struct {
		what         string
		got          restReply
		status       int
		responseCode string
	}{
		{"taken username", post("/api/public/register", map[string]string{"username": u.username, "name": "X", "password": "password1"}), 409, "USERNAME_EXISTED"},
		{"short username", post("/api/public/register", map[string]string{"username": "abc", "name": "X", "password": "password1"}), 400, "CREDENTIALS_NOTVALID"},
		{"short password", post("/api/public/register", map[string]string{"username": "longenough1", "name": "X", "password": "short"}), 400, "CREDENTIALS_NOTVALID"},
		{"empty name", post("/api/public/register", map[string]string{"username": "longenough2", "password": "password1"}), 400, "CREDENTIALS_NOTVALID"},
		{"wrong password", post("/api/public/login", map[string]string{"username": u.username, "password": "password2"}), 401, "PASSWORD_INVALID"},
		{"unknown user", post("/api/public/login", map[string]string{"username": "nobody_here", "password": "password1"}), 401, "USERNAME_NOT_EXISTED"},
		{"GET login", vmrREST(t, srv.url, http.MethodGet, "/api/public/login", "", nil), 405, ""},
		{"no token", vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/1/0", "", nil), 401, ""},
		{"bad token", vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/1/0", "nonsense", nil), 401, ""},
		{"bad friend id", vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/x/0", u.token, nil), 400, ""},
		{"negative offset", vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/1/-1", u.token, nil), 400, ""},
		{"GET logout", vmrREST(t, srv.url, http.MethodGet, "/api/protected/logout", u.token, nil), 405, ""},
	}
	for _, c := range cases {
		if c.got.Status != c.status || c.got.ResponseCode != c.responseCode {
			t.Errorf("%s: %d %q, want %d %q", c.what, c.got.Status, c.got.ResponseCode, c.status, c.responseCode)
		}
	}

	login := post("/api/public/login", map[string]string{"username": u.username, "password": "password1"})
	var d struct {
		UserID   uint64 `json:"userId"`
		JWTToken string `json:"jwtToken"`
	}
	if err := json.Unmarshal(login.Data, &d); login.Status != 200 || err != nil || d.UserID != u.id || d.JWTToken == "" {
		t.Fatalf("login: %d %s", login.Status, login.Data)
	}
	empty := vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/999999/0", d.JWTToken, nil)
	if empty.Status != 200 || string(empty.Data) != `{"messages":[],"newOffset":0}` {
		t.Errorf("chat with nobody: %d %s", empty.Status, empty.Data)
	}

	out := vmrREST(t, srv.url, http.MethodPost, "/api/protected/logout", d.JWTToken, nil)
	if out.Status != 200 || out.Message != "Logout successfully" {
		t.Errorf("logout: %+v", out)
	}
	if r := vmrREST(t, srv.url, http.MethodGet, "/api/protected/chat/1/0", d.JWTToken, nil); r.Status != 401 {
		t.Errorf("chat after logout: %d, want 401", r.Status)
	}
	_, err := vmrTransports(t, srv.url)["grpc-web"].wallet.GetBalance(ctxT(t), vmrReq(d.JWTToken, &vmrpb.Empty{}))
	wantCode(t, "GetBalance after logout", err, connect.CodeUnauthenticated)
	if _, res, err := websocket.Dial(ctxT(t), "ws"+srv.url[4:]+"/ws?token="+d.JWTToken, nil); err == nil || res == nil || res.StatusCode != 401 {
		t.Errorf("websocket after logout: %v %v, want 401", err, res)
	}
}

// TestVMRIdentityAcrossAPIs: a user registered through VMR's REST signs in
// through surge.wallet.v1 and sees the same wallet, and back.
func TestVMRIdentityAcrossAPIs(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	v := vmrTransports(t, srv.url)["grpc"]

	viaVMR := vmrRegister(t, srv.url, "cross")
	res, err := w.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: viaVMR.username, Password: "password1"}))
	if err != nil || res.Msg.User.Id != viaVMR.id {
		t.Fatalf("surge login of a VMR user: %v %v", res, err)
	}
	fundWallet(t, srv.c, member{id: viaVMR.id}, 5000)
	if got := w.balance(t, member{id: viaVMR.id, token: res.Msg.Token}); got != 5000 {
		t.Errorf("surge balance %d, want 5000", got)
	}
	bal, err := v.wallet.GetBalance(ctxT(t), vmrReq(res.Msg.Token, &vmrpb.Empty{}))
	if err != nil || bal.Msg.Data.GetBalance() != 5000 || bal.Msg.Data.GetUserName() != viaVMR.username {
		t.Errorf("VMR balance with a surge token: %v %v", bal, err)
	}

	viaSurge := w.register(t, "back")
	login := vmrREST(t, srv.url, http.MethodPost, "/api/public/login", "", map[string]string{"username": viaSurge.username, "password": "password1"})
	var d struct {
		UserID   uint64 `json:"userId"`
		JWTToken string `json:"jwtToken"`
	}
	if err := json.Unmarshal(login.Data, &d); login.Status != 200 || err != nil || d.UserID != viaSurge.id {
		t.Fatalf("VMR login of a surge user: %d %s", login.Status, login.Data)
	}
	info, err := v.friend.GetUserInfo(ctxT(t), vmrReq(d.JWTToken, &vmrpb.GetUserInfoRequest{UserId: int64(viaVMR.id)}))
	if err != nil || info.Msg.User.GetUsername() != viaVMR.username {
		t.Errorf("GetUserInfo across APIs: %v %v", info, err)
	}
}

// TestVMRRPC: every RPC of vmr.WalletService and vmr.FriendService, and
// their error cases, over gRPC, gRPC-Web binary and gRPC-Web text.
func TestVMRRPC(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	for name, v := range vmrTransports(t, srv.url) {
		t.Run(name, func(t *testing.T) { checkVMRRPC(t, srv, v) })
	}
}

func checkVMRRPC(t *testing.T, srv *server, v vmrClients) {
	a, b, c := vmrRegister(t, srv.url, "alice"), vmrRegister(t, srv.url, "bob"), vmrRegister(t, srv.url, "carol")
	_, err := v.wallet.GetBalance(ctxT(t), vmrReq("", &vmrpb.Empty{}))
	wantCode(t, "no token", err, connect.CodeUnauthenticated)
	_, err = v.friend.GetFriendList(ctxT(t), vmrReq("bad", &vmrpb.Empty{}))
	wantCode(t, "bad token", err, connect.CodeUnauthenticated)
	checkVMRFriends(t, v, a, b, c)
	checkVMRTransfers(t, srv, v, a, b)
	_, err = v.wallet.RemindTransfer(ctxT(t), vmrReq("", &vmrpb.TransferReminderRequest{UserId: int64(b.id), Amount: 1000}))
	wantCode(t, "RemindTransfer without a token", err, connect.CodeUnauthenticated)
	_, err = v.wallet.GetTransferReminder(ctxT(t), vmrReq("bad", &vmrpb.Empty{}))
	wantCode(t, "GetTransferReminder with a bad token", err, connect.CodeUnauthenticated)
}

func setStatus(t *testing.T, v vmrClients, u vmrUser, typ vmrpb.SetFriendStatusRequest_Type, peer vmrUser) *vmrpb.Error {
	t.Helper()
	res, err := v.friend.SetFriendStatus(ctxT(t), vmrReq(u.token, &vmrpb.SetFriendStatusRequest{Type: typ, FriendId: int64(peer.id)}))
	if err != nil {
		t.Fatalf("SetFriendStatus %v: %v", typ, err)
	}
	return res.Msg.Error
}

func friendStatus(t *testing.T, v vmrClients, u vmrUser, peer vmrUser) vmrpb.FriendStatus {
	t.Helper()
	res, err := v.friend.GetFriendList(ctxT(t), vmrReq(u.token, &vmrpb.Empty{}))
	if err != nil || res.Msg.Error != nil {
		t.Fatalf("GetFriendList: %v %v", res, err)
	}
	for _, f := range res.Msg.FriendInfo {
		if f.Id == int64(peer.id) {
			return f.FriendStatus
		}
	}
	return vmrpb.FriendStatus_NOTHING
}

func checkVMRFriends(t *testing.T, v vmrClients, a, b, c vmrUser) {
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ADD_FRIEND, b); e != nil {
		t.Fatalf("add: %v", e)
	}
	if got := friendStatus(t, v, a, b); got != vmrpb.FriendStatus_WAITING {
		t.Errorf("a sees b %v, want WAITING", got)
	}
	if got := friendStatus(t, v, b, a); got != vmrpb.FriendStatus_NOT_ANSWER {
		t.Errorf("b sees a %v, want NOT_ANSWER", got)
	}
	q, err := v.friend.QueryUser(ctxT(t), vmrReq(a.token, &vmrpb.UserListRequest{QueryString: b.username}))
	if err != nil || len(q.Msg.User) != 1 || q.Msg.User[0].Id != int64(b.id) || q.Msg.User[0].FriendStatus != vmrpb.FriendStatus_WAITING {
		t.Errorf("QueryUser %s: %v %v", b.username, q, err)
	}
	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a); e != nil {
		t.Fatalf("accept: %v", e)
	}
	if got := friendStatus(t, v, a, b); got != vmrpb.FriendStatus_FRIEND {
		t.Errorf("after accept a sees b %v", got)
	}
	wantVMRError(t, "accept without a request", setStatus(t, v, c, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a), vmrpb.ErrorCode_FAILUE)
	// c asks a; a rejects it, then c withdraws it (the app's "Hủy lời mời").
	for _, p := range [][2]vmrUser{{a, c}, {c, a}} {
		if e := setStatus(t, v, c, vmrpb.SetFriendStatusRequest_ADD_FRIEND, a); e != nil {
			t.Fatal(e)
		}
		if e := setStatus(t, v, p[0], vmrpb.SetFriendStatusRequest_REJECT_FRIEND, p[1]); e != nil {
			t.Fatalf("%s rejects: %v", p[0].username, e)
		}
		if got := friendStatus(t, v, a, c); got != vmrpb.FriendStatus_NOTHING {
			t.Errorf("after %s rejected, a sees c %v", p[0].username, got)
		}
	}
	wantVMRError(t, "reject without a request", setStatus(t, v, a, vmrpb.SetFriendStatusRequest_REJECT_FRIEND, c), vmrpb.ErrorCode_FAILUE)
	wantVMRError(t, "remove a stranger", setStatus(t, v, a, vmrpb.SetFriendStatusRequest_REMOVE_FRIEND, c), vmrpb.ErrorCode_FAILUE)
	wantVMRError(t, "add nobody", setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ADD_FRIEND, vmrUser{id: 1 << 40}), vmrpb.ErrorCode_FAILUE)

	info, err := v.friend.GetUserInfo(ctxT(t), vmrReq(a.token, &vmrpb.GetUserInfoRequest{UserId: int64(b.id)}))
	if err != nil || info.Msg.User.GetName() != "VMR "+b.username || info.Msg.User.GetFriendStatus() != vmrpb.FriendStatus_FRIEND {
		t.Errorf("GetUserInfo: %v %v", info, err)
	}
	info, err = v.friend.GetUserInfo(ctxT(t), vmrReq(a.token, &vmrpb.GetUserInfoRequest{UserId: 1 << 40}))
	if err != nil {
		t.Fatal(err)
	}
	wantVMRError(t, "GetUserInfo of nobody", info.Msg.Error, vmrpb.ErrorCode_RECEIVER_NOT_EXIST)
}

func transfer(t *testing.T, v vmrClients, from vmrUser, req *vmrpb.TransferRequest) *vmrpb.Error {
	t.Helper()
	res, err := v.wallet.Transfer(ctxT(t), vmrReq(from.token, req))
	if err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	return res.Msg.Error
}

func vmrBalance(t *testing.T, v vmrClients, u vmrUser) int64 {
	t.Helper()
	res, err := v.wallet.GetBalance(ctxT(t), vmrReq(u.token, &vmrpb.Empty{}))
	if err != nil || res.Msg.Error != nil {
		t.Fatalf("GetBalance: %v %v", res, err)
	}
	return res.Msg.Data.Balance
}

func checkVMRTransfers(t *testing.T, srv *server, v vmrClients, a, b vmrUser) {
	to := int64(b.id)
	wantVMRError(t, "too small", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: to, Amount: 999, Password: "password1"}), vmrpb.ErrorCode_AMOUNT_NOT_VALID)
	wantVMRError(t, "to self", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: int64(a.id), Amount: 1000, Password: "password1"}), vmrpb.ErrorCode_RECEIVER_NOT_EXIST)
	wantVMRError(t, "to nobody", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: 1 << 40, Amount: 1000, Password: "password1"}), vmrpb.ErrorCode_RECEIVER_NOT_EXIST)
	wantVMRError(t, "no password", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: to, Amount: 1000}), vmrpb.ErrorCode_PASSWORD_INVALID)
	wantVMRError(t, "wrong password", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: to, Amount: 1000, Password: "password2"}), vmrpb.ErrorCode_PASSWORD_INVALID)
	wantVMRError(t, "unfunded", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 1, Receiver: to, Amount: 1000, Password: "password1"}), vmrpb.ErrorCode_BALANCE_NOT_ENOUGH)

	fundWallet(t, srv.c, member{id: a.id}, 10000)
	if e := transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 2, Receiver: to, Amount: 2500, Message: "lunch", Password: "password1"}); e != nil {
		t.Fatalf("transfer: %v", e)
	}
	wantVMRError(t, "same request_id", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 2, Receiver: to, Amount: 2500, Message: "lunch", Password: "password1"}), vmrpb.ErrorCode_REQUEST_EXISTED)
	wantVMRError(t, "same request_id, other body", transfer(t, v, a, &vmrpb.TransferRequest{RequestId: 2, Receiver: to, Amount: 1000, Password: "password1"}), vmrpb.ErrorCode_REQUEST_EXISTED)
	if e := transfer(t, v, b, &vmrpb.TransferRequest{RequestId: 2, Receiver: int64(a.id), Amount: 1000, Password: "password1"}); e != nil {
		t.Errorf("the receiver's own request_id 2: %v (request ids are per sender)", e)
	}
	if ga, gb := vmrBalance(t, v, a), vmrBalance(t, v, b); ga != 8500 || gb != 1500 {
		t.Errorf("balances %d and %d, want 8500 and 1500", ga, gb)
	}

	h, err := v.wallet.GetHistoryWithOffset(ctxT(t), vmrReq(a.token, &vmrpb.GetHistoryWithOffsetRequest{}))
	if err != nil || h.Msg.Error != nil || len(h.Msg.Data.GetItem()) != 3 {
		t.Fatalf("history: %v %v", h, err)
	}
	got := []string{}
	for _, it := range h.Msg.Data.Item {
		got = append(got, fmt.Sprintf("%v %d->%d %d %q bal=%d", it.Type, it.Sender, it.Receiver, it.Amount, it.Message, it.Balance))
	}
	want := []string{
		fmt.Sprintf("RECEIVE %d->%d 1000 \"\" bal=8500", b.id, a.id),
		fmt.Sprintf("TRANSFER %d->%d 2500 \"lunch\" bal=7500", a.id, b.id),
		fmt.Sprintf("RECEIVE 0->%d 10000 \"\" bal=10000", a.id),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history\n got %q\nwant %q", got, want)
	}
	h, err = v.wallet.GetHistoryWithOffset(ctxT(t), vmrReq(a.token, &vmrpb.GetHistoryWithOffsetRequest{Offset: 2}))
	if err != nil || len(h.Msg.Data.GetItem()) != 1 || h.Msg.Data.Item[0].Amount != 10000 {
		t.Errorf("history from offset 2: %v %v", h, err)
	}
	h, err = v.wallet.GetHistoryWithOffset(ctxT(t), vmrReq(a.token, &vmrpb.GetHistoryWithOffsetRequest{Offset: -1}))
	if err != nil {
		t.Fatal(err)
	}
	wantVMRError(t, "negative offset", h.Msg.Error, vmrpb.ErrorCode_FAILUE)

	cf, err := v.friend.GetChatFriendList(ctxT(t), vmrReq(b.token, &vmrpb.Empty{}))
	if err != nil || len(cf.Msg.FriendInfo) != 1 {
		t.Fatalf("chat friends: %v %v", cf, err)
	}
	if f := cf.Msg.FriendInfo[0]; f.Id != int64(a.id) || f.LastMessage != "1000;" || f.LastMessageType != "TRANSFER" ||
		f.LastMessageSender != int64(b.id) || f.NumUnreadMessage != 1 || f.LastMessageTimestamp == 0 {
		t.Errorf("b's chat friend: %v", f)
	}
	clr, err := v.friend.ClearUnreadMessage(ctxT(t), vmrReq(b.token, &vmrpb.ClearUnreadMessageRequest{FriendId: int64(a.id)}))
	if err != nil || clr.Msg.Error != nil {
		t.Fatalf("clear: %v %v", clr, err)
	}
	cf, _ = v.friend.GetChatFriendList(ctxT(t), vmrReq(b.token, &vmrpb.Empty{}))
	if n := cf.Msg.FriendInfo[0].NumUnreadMessage; n != 0 {
		t.Errorf("unread after clear: %d", n)
	}

}
