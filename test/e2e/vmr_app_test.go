package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// These tests read surge as VMR's web app does: they assemble chat pages,
// name history rows and sort them with the app's own rules.

// vmrFriends makes a and b friends through VMR's FriendService.
func vmrFriends(t *testing.T, v vmrClients, a, b vmrUser) {
	t.Helper()
	if e := setStatus(t, v, a, vmrpb.SetFriendStatusRequest_ADD_FRIEND, b); e != nil {
		t.Fatalf("add: %v", e)
	}
	if e := setStatus(t, v, b, vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND, a); e != nil {
		t.Fatalf("accept: %v", e)
	}
}

// chatPage is one reply of GET /api/protected/chat/{friendId}/{offset}.
type chatPage struct {
	Messages  []wsChat `json:"messages"`
	NewOffset int64    `json:"newOffset"`
}

// readChatPage reads one page of u's conversation with friend.
func readChatPage(t *testing.T, base string, u, friend vmrUser, offset int64) chatPage {
	t.Helper()
	r := vmrREST(t, base, http.MethodGet, fmt.Sprintf("/api/protected/chat/%d/%d", friend.id, offset), u.token, nil)
	var p chatPage
	if err := json.Unmarshal(r.Data, &p); r.Status != http.StatusOK || err != nil {
		t.Fatalf("chat page at %d: %d %s", offset, r.Status, r.Data)
	}
	return p
}

// appConversation loads a whole conversation as VMR's app does: from
// offset 0, each page put before what it has (its message reducer's
// [...page, ...messages]), the next offset being how many it holds.
func appConversation(t *testing.T, base string, u, friend vmrUser) (texts []string, pages int) {
	t.Helper()
	var shown []wsChat
	for {
		p := readChatPage(t, base, u, friend, int64(len(shown)))
		if len(p.Messages) == 0 {
			break
		}
		pages++
		shown = append(slices.Clone(p.Messages), shown...)
		if p.NewOffset != int64(len(shown)) {
			t.Fatalf("newOffset %d after %d messages", p.NewOffset, len(shown))
		}
	}
	for _, m := range shown {
		texts = append(texts, m.Message)
	}
	return texts, pages
}

// TestVMRChatPagesInAppOrder: 25 messages sent in order over VMR's
// WebSocket come back, page 0 (the original's Redis-cached first load)
// and page 1 (its "load more" from MySQL) each oldest first, so that the
// app's prepending shows m1…m25 in order, to both users.
func TestVMRChatPagesInAppOrder(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	checkVMRChatPages(t, srv.url, srv.url)
}

// TestVMRHistoryFromOutside: a VMR user funded by the operator (@world →
// wallet:N) and paid from a ledger account that is no user reads their
// history as the app does: for each row it asks GetUserInfo for the other
// side (HistoryItem's friendId) and shows its name, so every row's
// counterparty must answer a user with a name and no error.
func TestVMRHistoryFromOutside(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	checkVMRHistoryFromOutside(t, srv, srv.url)
}

// TestClusterVMRApp: both, in a cluster, with the writes made through
// one node and the app reading through another.
func TestClusterVMRApp(t *testing.T) {
	c := startCluster(t, 1, 2, walletArgs...)
	checkVMRChatPages(t, c.nodes[0].url, c.nodes[1].url)
	checkVMRHistoryFromOutside(t, c.nodes[0], c.nodes[1].url)
}

// checkVMRChatPages sends m1…m25 through the WebSocket at writeURL and
// reads the pages as the app does at readURL.
func checkVMRChatPages(t *testing.T, writeURL, readURL string) {
	v := vmrTransports(t, writeURL)["grpc-web"]
	a, b := vmrRegister(t, writeURL, "pager"), vmrRegister(t, writeURL, "paged")
	vmrFriends(t, v, a, b)

	wa := vmrSocketReady(t, writeURL, a)
	var want []string
	for i := 1; i <= 25; i++ {
		text := fmt.Sprintf("m%d", i)
		sendChat(t, wa, b, text)
		if got := chatOf(t, wa, "SEND_BACK"); got.Message != text {
			t.Fatalf("SEND_BACK %q, want %q", got.Message, text)
		}
		want = append(want, text)
	}

	first := readChatPage(t, readURL, a, b, 0)
	if n := len(first.Messages); n != 20 || first.Messages[0].Message != "m6" || first.Messages[n-1].Message != "m25" {
		t.Errorf("page 0 holds %d messages from %v, want m6…m25 oldest first", n, first.Messages)
	}
	for _, u := range [][2]vmrUser{{a, b}, {b, a}} {
		got, pages := appConversation(t, readURL, u[0], u[1])
		if pages != 2 || !slices.Equal(got, want) {
			t.Errorf("%s's app shows, in %d pages,\n%q\nwant, in 2 pages,\n%q", u[0].username, pages, got, want)
		}
	}
}

// checkVMRHistoryFromOutside funds a VMR user and moves their money
// through writer, then reads their history as the app does at readURL.
func checkVMRHistoryFromOutside(t *testing.T, writer *server, readURL string) {
	w := vmrTransports(t, writer.url)["grpc-web"]
	u, friend := vmrRegister(t, writer.url, "funded"), vmrRegister(t, writer.url, "payer")
	vmrFriends(t, w, u, friend)

	fundWallet(t, writer.c, member{id: u.id}, 50000)
	shop := fmt.Sprintf("shop-%06d", userSeq.Add(1))
	openAccounts(t, writer.c, shop)
	fund(t, writer.c, shop, 3000)
	mustTransfer(t, writer.c, TransferReq{From: shop, To: walletAccount(member{id: u.id}), Amount: 3000, Memo: "refund"})
	if e := transfer(t, w, u, &vmrpb.TransferRequest{RequestId: 1, Receiver: int64(friend.id), Amount: 2000, Password: "password1"}); e != nil {
		t.Fatalf("transfer: %v", e)
	}

	v := vmrTransports(t, readURL)["grpc-web"]
	h, err := v.wallet.GetHistoryWithOffset(ctxT(t), vmrReq(u.token, &vmrpb.GetHistoryWithOffsetRequest{}))
	if err != nil || h.Msg.Error != nil || len(h.Msg.Data.GetItem()) != 3 {
		t.Fatalf("history: %v %v", h, err)
	}
	wantHistoryIDsFalling(t, h.Msg.Data.Item)
	sides := map[int64]*vmrpb.UserResponse{}
	for _, it := range h.Msg.Data.Item {
		other := it.Sender // HistoryGroup's friendId: the side that is not the user
		if other == int64(u.id) {
			other = it.Receiver
		}
		info, err := v.friend.GetUserInfo(ctxT(t), vmrReq(u.token, &vmrpb.GetUserInfoRequest{UserId: other}))
		if err != nil || info.Msg.Error != nil || info.Msg.User.GetName() == "" {
			t.Errorf("%v of %d from %d: GetUserInfo(%d) = %v %v, want a user with a name", it.Type, it.Amount, it.Sender, other, info, err)
			continue
		}
		sides[other] = info.Msg.User
	}
	if len(sides) != 2 || sides[int64(friend.id)].GetName() != "VMR "+friend.username {
		t.Fatalf("rows name %v, want the friend and one system counterparty for both outside accounts", sides)
	}
	for id, side := range sides {
		if id != int64(friend.id) && side.FriendStatus != vmrpb.FriendStatus_NOTHING {
			t.Errorf("the system counterparty %v is %v to the user, want NOTHING", side, side.FriendStatus)
		}
	}
}

// TestVMRHistoryInAppOrder: VMR's app groups history rows by month and
// sorts each group by id, highest first (its HistoryGroup), as VMR's ids
// grew with each row. So a user's history ids must fall from the newest
// row to the oldest, stay the same from call to call, and fit a
// JavaScript number, which is what grpc-web makes of an int64.
func TestVMRHistoryInAppOrder(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	v := vmrTransports(t, srv.url)["grpc-web"]
	u, friend := vmrRegister(t, srv.url, "sorted"), vmrRegister(t, srv.url, "payee")
	vmrFriends(t, v, u, friend)
	fundWallet(t, srv.c, member{id: u.id}, 100000)
	for i := range int64(9) {
		if e := transfer(t, v, u, &vmrpb.TransferRequest{RequestId: i + 1, Receiver: int64(friend.id), Amount: uint64(1000 + i), Password: "password1"}); e != nil {
			t.Fatalf("transfer %d: %v", i+1, e)
		}
	}
	page := func(offset int64) []*vmrpb.HistoryResponse_Item {
		h, err := v.wallet.GetHistoryWithOffset(ctxT(t), vmrReq(u.token, &vmrpb.GetHistoryWithOffsetRequest{Offset: offset}))
		if err != nil || h.Msg.Error != nil {
			t.Fatalf("history from %d: %v %v", offset, h, err)
		}
		return h.Msg.Data.GetItem()
	}
	all := page(0)
	if len(all) != 10 || all[0].Amount != 1008 || all[9].Amount != 100000 {
		t.Fatalf("history: %v, want 10 rows newest first", all)
	}
	wantHistoryIDsFalling(t, all)
	if later := page(4); len(later) != 6 || later[0].Id != all[4].Id {
		t.Errorf("from offset 4: %v, want the same rows and ids as %v", later, all[4:])
	}
}

// wantHistoryIDsFalling checks that a page of history, newest first, has
// ids the app sorts back into that order, each a JavaScript-safe integer.
func wantHistoryIDsFalling(t *testing.T, items []*vmrpb.HistoryResponse_Item) {
	t.Helper()
	for i, it := range items {
		if it.Id <= 0 || it.Id > 1<<53 || (i > 0 && it.Id >= items[i-1].Id) {
			t.Errorf("row %d (amount %d) has id %d after %d: want ids falling, in 1…2^53", i, it.Amount, it.Id, items[max(i-1, 0)].Id)
		}
	}
}
