package walletstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// Transfer reminders (VMR chat's RemindTransfer). A reminder is written
// three times, with the same value, in one batch:
//
//	sq/<from><request id>          the sender's request id, for idempotency
//	sn/<user><at><id>              once under each of its two users, so a
//	                               user's reminders read newest first
var (
	prefixReminderRequest = []byte("sq/")
	prefixReminder        = []byte("sn/")
)

func userPrefix(prefix []byte, u social.UserID) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), uint64(u))
}

func reminderRequestKey(from social.UserID, requestID string) []byte {
	return append(userPrefix(prefixReminderRequest, from), requestID...)
}

func reminderKey(u social.UserID, r *social.Reminder) []byte {
	k := binary.BigEndian.AppendUint64(userPrefix(prefixReminder, u), uint64(r.At.UnixNano()))
	return binary.BigEndian.AppendUint64(k, r.ID)
}

// PutReminder writes r, made for the sender's requestID.
func (b SocialBatch) PutReminder(requestID string, r *social.Reminder) {
	v := encodeReminder(r)
	_ = b.Set(reminderRequestKey(r.From, requestID), v, nil)
	_ = b.Set(reminderKey(r.From, r), v, nil)
	_ = b.Set(reminderKey(r.To, r), v, nil)
}

// ReminderFor reads the reminder the sender made for requestID, if any.
func (s Store) ReminderFor(from social.UserID, requestID string) (social.Reminder, bool, error) {
	v, ok, err := s.Get(reminderRequestKey(from, requestID))
	if !ok || err != nil {
		return social.Reminder{}, false, err
	}
	r, err := decodeReminder(v)
	return r, err == nil, err
}

// Reminders returns up to limit of the reminders u sent or received,
// newest first.
func (s Store) Reminders(u social.UserID, limit int) ([]social.Reminder, error) {
	out := make([]social.Reminder, 0, min(limit, 16))
	lower := userPrefix(prefixReminder, u)
	err := s.Scan(lower, store.UpperBound(lower), true, func(k, v []byte) (bool, error) {
		r, err := decodeReminder(v)
		if err != nil {
			return false, fmt.Errorf("reminder record %x: %w", k, err)
		}
		out = append(out, r)
		return len(out) < limit, nil
	})
	return out, err
}

func encodeReminder(r *social.Reminder) []byte {
	var e codec.Encoder
	e.Byte(store.RecordVersion)
	e.Uvarint(r.ID)
	e.Uvarint(uint64(r.From))
	e.Uvarint(uint64(r.To))
	e.Varint(r.Amount)
	e.String(r.Text)
	e.Varint(r.At.UnixNano())
	return e.B
}

func decodeReminder(v []byte) (social.Reminder, error) {
	d := codec.Decoder{B: v}
	if d.Byte() != store.RecordVersion {
		return social.Reminder{}, codec.ErrCorrupt
	}
	var r social.Reminder
	r.ID = d.Uvarint()
	r.From = social.UserID(d.Uvarint())
	r.To = social.UserID(d.Uvarint())
	r.Amount = d.Varint()
	r.Text = d.Str()
	r.At = time.Unix(0, d.Varint()).UTC()
	return r, d.Done()
}
