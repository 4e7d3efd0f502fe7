package vmr

import (
	"context"
	"strconv"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// minTransfer is the smallest amount VMR accepts (its backend refused
// less than 1,000 with AMOUNT_NOT_VALID).
const minTransfer = 1000

// historyPage is the page size of GetHistoryWithOffset, VMR's.
const historyPage = 20

// walletService implements vmr.WalletService.
type walletService struct{ *Face }

// GetBalance is the caller's balance, names, and the time of the
// wallet's latest movement.
func (s walletService) GetBalance(ctx context.Context, c caller, _ *vmrpb.Empty) (*vmrpb.BalanceResponse, error) {
	bal, err := s.local.GetBalance(ctx, c.user)
	if err != nil {
		return &vmrpb.BalanceResponse{Error: failure(err)}, nil
	}
	hist, err := s.local.GetHistory(ctx, c.user, &walletv1.GetHistoryRequest{PageSize: 1})
	if err != nil {
		return &vmrpb.BalanceResponse{Error: failure(err)}, nil
	}
	data := &vmrpb.BalanceResponse_Data{Balance: bal.Balance}
	if len(hist.Items) > 0 {
		data.LastUpdated = hist.Items[0].Time.GetSeconds()
	}
	if u, ok := s.local.User(c.user); ok {
		data.UserName, data.Name = u.Username, u.Name
	}
	return &vmrpb.BalanceResponse{Data: data}, nil
}

// Transfer moves money once per (sender, request_id): a repeated
// request_id moves nothing and answers REQUEST_EXISTED, as VMR did. The
// password is required and checked.
func (s walletService) Transfer(ctx context.Context, c caller, m *vmrpb.TransferRequest) (*vmrpb.TransferResponse, error) {
	fail := func(code vmrpb.ErrorCode, msg string) (*vmrpb.TransferResponse, error) {
		return &vmrpb.TransferResponse{Error: replyError(code, msg)}, nil
	}
	switch {
	case m.Amount < minTransfer:
		return fail(vmrpb.ErrorCode_AMOUNT_NOT_VALID, "amount must be at least 1000")
	case m.Receiver <= 0 || uint64(m.Receiver) == c.user:
		return fail(vmrpb.ErrorCode_RECEIVER_NOT_EXIST, "no such receiver")
	case m.Password == "":
		return fail(vmrpb.ErrorCode_PASSWORD_INVALID, "password is required")
	case m.Amount > 1<<62:
		return fail(vmrpb.ErrorCode_AMOUNT_NOT_VALID, "amount too large")
	}
	res, err := s.local.Transfer(ctx, c.user, c.peer, &walletv1.TransferRequest{
		RequestId: requestID(m.RequestId), ToUserId: uint64(m.Receiver),
		Amount: int64(m.Amount), Message: m.Message, Password: m.Password,
	})
	switch {
	case err != nil:
		return &vmrpb.TransferResponse{Error: transferFailure(err)}, nil
	case res.Replayed:
		return fail(vmrpb.ErrorCode_REQUEST_EXISTED, "request_id was used before")
	}
	return &vmrpb.TransferResponse{}, nil
}

// requestID is surge's request_id for VMR's.
func requestID(id int64) string { return "vmr-" + strconv.FormatInt(id, 10) }

// transferFailure maps a surge Transfer or RemindTransfer error to VMR's
// codes.
func transferFailure(err error) *vmrpb.Error {
	msg := messageOf(err)
	switch reasonOf(err) {
	case "INSUFFICIENT_FUNDS":
		return replyError(vmrpb.ErrorCode_BALANCE_NOT_ENOUGH, msg)
	case "RECEIVER_NOT_FOUND", "SAME_ACCOUNT":
		return replyError(vmrpb.ErrorCode_RECEIVER_NOT_EXIST, msg)
	case "IDEMPOTENCY_CONFLICT":
		return replyError(vmrpb.ErrorCode_REQUEST_EXISTED, msg)
	case "BELOW_MINIMUM":
		return replyError(vmrpb.ErrorCode_AMOUNT_NOT_VALID, msg)
	}
	switch codeOf(err) {
	case connect.CodeUnauthenticated:
		return replyError(vmrpb.ErrorCode_PASSWORD_INVALID, msg)
	case connect.CodeNotFound:
		return replyError(vmrpb.ErrorCode_RECEIVER_NOT_EXIST, msg)
	}
	return failure(err)
}

// GetHistoryWithOffset pages through the caller's history, newest first.
// The other side of a row is a user's id, or systemUserID when it is an
// account of no user (@world's funding, a ledger account).
func (s walletService) GetHistoryWithOffset(ctx context.Context, c caller, m *vmrpb.GetHistoryWithOffsetRequest) (*vmrpb.HistoryResponse, error) {
	if m.Offset < 0 {
		return &vmrpb.HistoryResponse{Error: replyError(vmrpb.ErrorCode_FAILUE, "offset must not be negative")}, nil
	}
	page, err := s.local.GetHistory(ctx, c.user, &walletv1.GetHistoryRequest{PageSize: historyPage, Offset: uint64(m.Offset)})
	if err != nil {
		return &vmrpb.HistoryResponse{Error: failure(err)}, nil
	}
	data := &vmrpb.HistoryResponse_Data{Item: make([]*vmrpb.HistoryResponse_Item, len(page.Items))}
	for i, it := range page.Items {
		item := &vmrpb.HistoryResponse_Item{
			Id: int64(it.Seq), Amount: it.Amount, Timestamp: it.Time.GetSeconds(),
			Message: it.Message, Balance: it.BalanceAfter,
			Sender: int64(c.user), Receiver: systemUserID, Type: vmrpb.HistoryResponse_TRANSFER,
		}
		if it.CounterpartUsername != "" { // set for a user's wallet only
			item.Receiver = int64(it.CounterpartUserId)
		}
		if it.Type == walletv1.HistoryItem_RECEIVE {
			item.Sender, item.Receiver, item.Type = item.Receiver, item.Sender, vmrpb.HistoryResponse_RECEIVE
		}
		data.Item[i] = item
	}
	return &vmrpb.HistoryResponse{Data: data}, nil
}

// remindersListed is how many reminders GetTransferReminder returns, the
// newest: the most surge.wallet.v1's GetReminders gives at once.
const remindersListed = 100

// RemindTransfer asks a friend (user_id) to transfer the caller amount,
// with content, once per request_id: a repeated request_id answers
// REQUEST_EXISTED, as Transfer does.
func (s walletService) RemindTransfer(ctx context.Context, c caller, m *vmrpb.TransferReminderRequest) (*vmrpb.TransferReminderResponse, error) {
	fail := func(code vmrpb.ErrorCode, msg string) (*vmrpb.TransferReminderResponse, error) {
		return &vmrpb.TransferReminderResponse{Error: replyError(code, msg)}, nil
	}
	switch {
	case m.Amount < minTransfer:
		return fail(vmrpb.ErrorCode_AMOUNT_NOT_VALID, "amount must be at least 1000")
	case m.UserId <= 0 || uint64(m.UserId) == c.user:
		return fail(vmrpb.ErrorCode_RECEIVER_NOT_EXIST, "no such user")
	}
	res, err := s.local.RemindTransfer(ctx, c.user, &walletv1.RemindTransferRequest{
		RequestId: requestID(m.RequestId), ToUserId: uint64(m.UserId), Amount: m.Amount, Text: m.Content,
	})
	switch {
	case err != nil:
		return &vmrpb.TransferReminderResponse{Error: transferFailure(err)}, nil
	case res.Replayed:
		return fail(vmrpb.ErrorCode_REQUEST_EXISTED, "request_id was used before")
	}
	return &vmrpb.TransferReminderResponse{}, nil
}

// GetTransferReminder lists the newest reminders the caller sent or
// received, newest first.
func (s walletService) GetTransferReminder(ctx context.Context, c caller, _ *vmrpb.Empty) (*vmrpb.TransferReminderListResponse, error) {
	res, err := s.local.GetReminders(ctx, c.user, &walletv1.GetRemindersRequest{PageSize: remindersListed})
	if err != nil {
		return &vmrpb.TransferReminderListResponse{Error: failure(err)}, nil
	}
	out := &vmrpb.TransferReminderListResponse{Reminder: make([]*vmrpb.TransferReminder, len(res.Reminders))}
	for i, r := range res.Reminders {
		out.Reminder[i] = &vmrpb.TransferReminder{
			Id: int64(r.Id), Timestamp: r.CreatedAt.GetSeconds(), From: int64(r.FromUserId), To: int64(r.ToUserId),
			Amount: r.Amount, Content: r.Text,
		}
	}
	return out, nil
}
