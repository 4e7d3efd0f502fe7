package rpc

import (
	"context"
	"hash/fnv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// RemindTransfer asks a friend to pay the caller, durably, once per
// request_id of the caller; the friend's streams are told.
func (s walletService) RemindTransfer(ctx context.Context, m *walletv1.RemindTransferRequest) (*walletv1.RemindTransferResponse, error) {
	me := caller(ctx)
	if err := s.checkPayment(m.RequestId, m.Amount, "text", m.Text); err != nil {
		return nil, err
	}
	if s.repl != nil {
		return s.proposeReminder(ctx, me, m)
	}
	key := transferID(me, m.RequestId)
	unlock := s.transfers.lock("remind/" + key)
	defer unlock()
	prev, found, err := s.store.ReminderFor(me, m.RequestId)
	switch {
	case err != nil:
		return nil, s.internal("read reminder", err)
	case found && (prev.To != social.UserID(m.ToUserId) || prev.Amount != m.Amount || prev.Text != m.Text):
		return nil, errReminderConflict()
	case found:
		return &walletv1.RemindTransferResponse{Reminder: reminderPB(&prev), Replayed: true}, nil
	}
	s.mu.RLock()
	r, err := s.state.NewReminder(social.Reminder{
		ID: reminderID(key), From: me, To: social.UserID(m.ToUserId), Amount: m.Amount, Text: m.Text, At: time.Now().UTC(),
	})
	s.mu.RUnlock()
	if err != nil {
		return nil, socialError(err)
	}
	b := s.store.NewSocialBatch()
	b.PutReminder(m.RequestId, &r)
	if err := s.store.Commit(b.Batch); err != nil {
		return nil, s.internal("write reminder", err)
	}
	pb := reminderPB(&r)
	s.mu.Lock()
	s.notify(r.To, &walletv1.Event{Event: &walletv1.Event_Reminder{Reminder: pb}})
	s.mu.Unlock()
	return &walletv1.RemindTransferResponse{Reminder: pb}, nil
}

func errReminderConflict() error {
	return refusal(connect.CodeAlreadyExists, reasonIdempotencyConflict, "request_id was used for another reminder")
}

// GetReminders lists the caller's newest reminders, sent or received.
func (s walletService) GetReminders(ctx context.Context, m *walletv1.GetRemindersRequest) (*walletv1.GetRemindersResponse, error) {
	limit, err := pageSize(m.PageSize)
	if err != nil {
		return nil, err
	}
	rs, err := s.store.Reminders(caller(ctx), limit)
	if err != nil {
		return nil, s.internal("read reminders", err)
	}
	out := make([]*walletv1.Reminder, len(rs))
	for i := range rs {
		out[i] = reminderPB(&rs[i])
	}
	return &walletv1.GetRemindersResponse{Reminders: out}, nil
}

// reminderID numbers the reminder of a sender's request (key, as
// transferID makes it): a 63-bit hash, so it stays positive as VMR's
// int64 ids.
func reminderID(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64() >> 1
}

func reminderPB(r *social.Reminder) *walletv1.Reminder {
	return &walletv1.Reminder{
		Id: r.ID, FromUserId: uint64(r.From), ToUserId: uint64(r.To), Amount: r.Amount, Text: r.Text,
		CreatedAt: timestamppb.New(r.At),
	}
}
