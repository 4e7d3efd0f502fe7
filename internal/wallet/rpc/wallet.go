package rpc

import (
	"context"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// maxRequestID bounds a transfer's request_id, so that the ledger
// transfer id made from it stays within ledger.MaxIDLength.
const maxRequestID = 64

// walletService implements WalletService.
type walletService struct{ *Service }

// ledgerFailure maps a ledger error: refusals to their status, anything
// else logged as a fault.
func (s *Service) ledgerFailure(what string, err error) error {
	if mapped, ok := ledgerError(err); ok {
		return mapped
	}
	return s.internal(what, err)
}

// GetBalance reads the caller's wallet.
func (s walletService) GetBalance(ctx context.Context, req *walletv1.GetBalanceRequest) (*walletv1.GetBalanceResponse, error) {
	me, err := owner(ctx, req.UserId)
	if err != nil {
		return nil, err
	}
	a, err := s.ledger.Account(ctx, walletID(me))
	if err != nil {
		return nil, s.ledgerFailure("read wallet", err)
	}
	return &walletv1.GetBalanceResponse{
		UserId: uint64(me), AccountId: a.ID, Currency: a.Currency, Balance: a.Balance,
	}, nil
}

// validRequestID reports whether id is 1 to 64 characters of
// A-Z a-z 0-9 . _ : -, a subset of what ledger ids allow.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// checkPayment validates what a transfer and a transfer reminder share:
// the request id, the amount, and the text in the field named field.
func (s *Service) checkPayment(requestID string, amount int64, field, text string) error {
	switch {
	case !validRequestID(requestID):
		return invalid("request_id must be 1 to %d characters of A-Z a-z 0-9 . _ : -", maxRequestID)
	case amount < 1 || amount > ledger.MaxAmount:
		return invalid("amount must be an integer from 1 to %d", int64(ledger.MaxAmount))
	case amount < s.minAmt:
		return refusal(connect.CodeInvalidArgument, reasonBelowMinimum, "amount must be at least %d", s.minAmt)
	case len(text) > ledger.MaxMemoLength || !utf8.ValidString(text):
		return invalid("%s must be at most %d bytes of UTF-8", field, ledger.MaxMemoLength)
	}
	return nil
}

// checkTransfer validates a transfer request against everything but the
// money: it fails before anything is written.
func (s walletService) checkTransfer(ctx context.Context, m *walletv1.TransferRequest) (social.UserID, error) {
	me, err := owner(ctx, m.FromUserId)
	if err != nil {
		return 0, err
	}
	if err := s.checkPayment(m.RequestId, m.Amount, "message", m.Message); err != nil {
		return 0, err
	}
	if social.UserID(m.ToUserId) == me {
		return 0, refusal(connect.CodeInvalidArgument, reasonSameAccount, "cannot transfer to yourself")
	}
	if _, ok := s.user(social.UserID(m.ToUserId)); !ok {
		return 0, refusal(connect.CodeNotFound, reasonReceiverNotFound, "user %d not found", m.ToUserId)
	}
	return me, nil
}

// Transfer moves money from the caller's wallet. No password is checked
// unless the request carries one (step-up confirmation): the token
// authenticates the caller, and a slow hash per transfer is what held
// report 001's Transfer to 264 rps.
func (s walletService) Transfer(ctx context.Context, m *walletv1.TransferRequest) (*walletv1.TransferResponse, error) {
	me, err := s.checkTransfer(ctx, m)
	if err != nil {
		return nil, err
	}
	if m.Password != "" {
		u, _ := s.user(me)
		if _, err := s.checkPassword(ctx, u.Username, m.Password, errBadPassword); err != nil {
			return nil, err
		}
	}
	t, replayed, err := s.transfer(ctx, ledger.TransferRequest{
		ID: transferID(me, m.RequestId), From: walletID(me), To: walletID(social.UserID(m.ToUserId)),
		Amount: m.Amount, Memo: m.Message,
	})
	if err != nil {
		return nil, s.ledgerFailure("transfer", err)
	}
	return &walletv1.TransferResponse{
		TransferId: t.ID, FromUserId: uint64(me), ToUserId: m.ToUserId, Amount: t.Amount,
		Message: t.Memo, CreatedAt: timestamppb.New(t.CreatedAt), Replayed: replayed,
	}, nil
}

// GetHistory pages through the caller's wallet history, newest first.
func (s walletService) GetHistory(ctx context.Context, m *walletv1.GetHistoryRequest) (*walletv1.GetHistoryResponse, error) {
	me, err := owner(ctx, m.UserId)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	cursor, err := parsePageToken(m.PageToken)
	if err != nil {
		return nil, err
	}
	page, err := s.ledger.History(ctx, walletID(me), ledger.HistoryQuery{Limit: limit, Cursor: cursor, Offset: m.Offset})
	if err != nil {
		return nil, s.ledgerFailure("read history", err)
	}
	// A page's items and their times are allocated as two arrays rather
	// than two objects per item: less server CPU per GetHistory call in
	// alternating A/B pairs.
	n := len(page.Entries)
	items, backing, times := make([]*walletv1.HistoryItem, n), make([]walletv1.HistoryItem, n), make([]timestamppb.Timestamp, n)
	s.mu.RLock()
	for i := range page.Entries {
		items[i] = &backing[i]
		s.fillHistoryItem(items[i], &times[i], &page.Entries[i])
	}
	s.mu.RUnlock()
	return &walletv1.GetHistoryResponse{Items: items, NextPageToken: pageToken(page.NextCursor)}, nil
}

// fillHistoryItem sets it, with at as its time, from a ledger entry; it
// runs under the read lock.
func (s walletService) fillHistoryItem(it *walletv1.HistoryItem, at *timestamppb.Timestamp, e *ledger.Entry) {
	it.Type = walletv1.HistoryItem_RECEIVE
	if e.Direction == ledger.Debit {
		it.Type = walletv1.HistoryItem_SEND
	}
	it.TransferId, it.CounterpartAccount, it.Message = e.TransferID, e.Counterpart, e.Memo
	it.Amount, it.BalanceAfter, it.Seq = e.Amount, e.BalanceAfter, e.Seq
	at.Seconds, at.Nanos = e.At.Unix(), int32(e.At.Nanosecond())
	it.Time = at
	if id, ok := walletOwner(e.Counterpart); ok {
		it.CounterpartUserId = uint64(id)
		if u, ok := s.state.User(id); ok {
			it.CounterpartUsername = u.Username
		}
	}
}
