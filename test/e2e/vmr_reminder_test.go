package e2e

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// TestVMRTransferReminders: RemindTransfer and GetTransferReminder over
// gRPC, gRPC-Web binary and gRPC-Web text: a reminder is listed for both users, newest
// first, once per request_id of its sender, refused to strangers, to
// oneself and below VMR's minimum; surge.wallet.v1 lists the same
// reminders and streams a new one to the user asked; all of it survives a
// restart.
func TestVMRTransferReminders(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, walletArgs...)
	lists := map[string]*vmrpb.TransferReminderListResponse{}
	var users []vmrUser
	for name, v := range vmrTransports(t, srv.url) {
		t.Run(name, func(t *testing.T) {
			a := checkVMRReminders(t, srv, v)
			users = append(users, a)
			lists[a.token] = vmrReminders(t, v, a)
		})
	}
	srv.stop()
	srv = start(t, dir, walletArgs...)
	v := vmrTransports(t, srv.url)["grpc-web-text"]
	for _, a := range users {
		if got := vmrReminders(t, v, a); !proto.Equal(got, lists[a.token]) {
			t.Errorf("%s's reminders after a restart:\n%v\nwant\n%v", a.username, got, lists[a.token])
		}
	}
}

// checkVMRReminders runs the reminders of three new users over v and
// returns the one with two reminders.
func checkVMRReminders(t *testing.T, srv *server, v vmrClients) vmrUser {
	a, b, c := vmrRegister(t, srv.url, "rmdann"), vmrRegister(t, srv.url, "rmdbob"), vmrRegister(t, srv.url, "rmdcat")
	befriendVMR(t, v, a, b)
	w := newWalletClients(t, srv.url)
	stream, _ := subscribeAs(t, w, b.token)

	remind := func(from, to vmrUser, requestID, amount int64, content string) *vmrpb.Error {
		t.Helper()
		res, err := v.wallet.RemindTransfer(ctxT(t), vmrReq(from.token, &vmrpb.TransferReminderRequest{
			RequestId: requestID, UserId: int64(to.id), Amount: amount, Content: content,
		}))
		if err != nil {
			t.Fatalf("RemindTransfer: %v", err)
		}
		return res.Msg.Error
	}
	if e := remind(a, b, 1, 1500, "lunch"); e != nil {
		t.Fatalf("remind: %v", e)
	}
	if !stream.Receive() || stream.Msg().GetReminder().GetAmount() != 1500 || stream.Msg().GetReminder().GetFromUserId() != a.id {
		t.Errorf("b's stream: %v %v, want a's reminder", stream.Msg(), stream.Err())
	}
	wantVMRError(t, "same request_id", remind(a, b, 1, 1500, "lunch"), vmrpb.ErrorCode_REQUEST_EXISTED)
	wantVMRError(t, "same request_id, other amount", remind(a, b, 1, 2000, "lunch"), vmrpb.ErrorCode_REQUEST_EXISTED)
	wantVMRError(t, "below the minimum", remind(a, b, 2, 999, ""), vmrpb.ErrorCode_AMOUNT_NOT_VALID)
	wantVMRError(t, "oneself", remind(a, a, 2, 1000, ""), vmrpb.ErrorCode_RECEIVER_NOT_EXIST)
	wantVMRError(t, "nobody", remind(a, vmrUser{id: 1 << 40}, 2, 1000, ""), vmrpb.ErrorCode_RECEIVER_NOT_EXIST)
	wantVMRError(t, "a stranger", remind(a, c, 2, 1000, ""), vmrpb.ErrorCode_FAILUE)
	if e := remind(b, a, 1, 2000, "tickets"); e != nil {
		t.Errorf("b's own request_id 1: %v (request ids are per sender)", e)
	}

	want := []string{
		fmt.Sprintf("%d->%d 2000 tickets", b.id, a.id),
		fmt.Sprintf("%d->%d 1500 lunch", a.id, b.id),
	}
	for _, u := range []vmrUser{a, b} {
		got := vmrReminders(t, v, u)
		if describeReminders(got) != fmt.Sprint(want) {
			t.Errorf("%s's reminders %s, want %v", u.username, describeReminders(got), want)
		}
	}
	if got := vmrReminders(t, v, c); len(got.Reminder) != 0 {
		t.Errorf("c's reminders: %v", got)
	}
	list, err := w.wallet.GetReminders(ctxT(t), withToken(b.token, &walletv1.GetRemindersRequest{}))
	if err != nil || len(list.Msg.Reminders) != 2 || int64(list.Msg.Reminders[1].Id) != vmrReminders(t, v, a).Reminder[1].Id {
		t.Errorf("surge's GetReminders of b: %v %v", list, err)
	}
	return a
}

func vmrReminders(t *testing.T, v vmrClients, u vmrUser) *vmrpb.TransferReminderListResponse {
	t.Helper()
	res, err := v.wallet.GetTransferReminder(ctxT(t), vmrReq(u.token, &vmrpb.Empty{}))
	if err != nil || res.Msg.Error != nil {
		t.Fatalf("GetTransferReminder: %v %v", res, err)
	}
	return res.Msg
}

// describeReminders is a list in short: from->to amount content, with each
// reminder's id and time checked to be set.
func describeReminders(l *vmrpb.TransferReminderListResponse) string {
	var out []string
	for _, r := range l.Reminder {
		s := fmt.Sprintf("%d->%d %d %s", r.From, r.To, r.Amount, r.Content)
		if r.Id <= 0 || r.Timestamp <= 0 {
			s += " (no id or time)"
		}
		out = append(out, s)
	}
	return fmt.Sprint(out)
}
