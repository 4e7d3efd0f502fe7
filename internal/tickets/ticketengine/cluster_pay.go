package ticketengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
)

// Paying a reservation in a cluster: a chain of three steps.
//
//  1. Pay, on the reservation's (its area's) partition: the desk freezes a
//     RESERVED reservation whose hold has not run out (it does not expire
//     and cannot be cancelled while the payment is in flight), and the
//     Debit is forwarded to the payer's partition: a transfer of the
//     reservation's tickets.Charge to the event's organizer, with the id
//     tickets.PaymentID(reservation, attempt).
//  2. the payer's partition applies the transfer as any other (its credit
//     forwarded to the organizer's partition) and forwards its outcome
//     back, owed in the same write, as a PayEnd.
//  3. PayEnd, on the reservation's partition: a transfer made marks the
//     reservation PAID; a transfer refused (insufficient funds, an unknown
//     account) thaws the hold, which expires at once if its time has
//     passed meanwhile. Every node waiting for the payment is answered.
//
// So a hold running out while its payment is in flight ends in exactly one
// outcome: the payment begun before the hold ran out is PAID if its debit
// is made, and no money moves otherwise; no refund is ever needed. A pay
// arriving while a payment is in flight (a client's retry through another
// node) waits for it, and one arriving once the reservation is paid gets it
// as it is, as on a single node.

// payState is a reservation's payment, once one has begun.
type payState struct {
	// Attempt counts the attempts; Paying says the last is in flight.
	Attempt uint32
	Paying  bool
	// Began is when the attempt in flight began, within the hold.
	Began time.Time
	// Waiting are the reply addresses of the nodes waiting for the
	// attempt in flight.
	Waiting [][]byte
}

// pay begins paying reservation c.ID from c.Account (step 1).
func (s *clusterShard) pay(c *Pay, now time.Time) {
	r, ok := s.reservation(c.ID)
	switch {
	case !ok:
		return // not found
	case r.State == tickets.Paid:
		c.Reservation = s.snapshot(c.ID) // a replay
		return
	case s.desk.Frozen(c.ID):
		p := s.pays[c.ID]
		if c.from != nil {
			p.Waiting = append(p.Waiting, c.from)
			s.record(tkKey(tkPayPrefix, c.ID), encodePay(p))
		}
		c.deferred = true
		return
	}
	c.Reservation = s.snapshot(c.ID)
	var ev *tickets.EventSpec
	a := s.areas[tickets.AreaKey(r.EventID, r.AreaID)]
	if a != nil {
		ev = a.event
	}
	amount, err := tickets.Charge(ev, r, now)
	if err == nil {
		_, err = s.desk.Freeze(c.ID, now)
	}
	if err != nil {
		c.Err = refusal(r, err)
		return
	}
	p := s.pays[c.ID]
	if p == nil {
		p = &payState{}
		s.pays[c.ID] = p
	}
	p.Attempt++
	if amount == 0 {
		s.paid(r, p, now, now)
		c.Reservation = s.snapshot(c.ID)
		return
	}
	p.Paying, p.Began, p.Waiting = true, now, nil
	if c.from != nil {
		p.Waiting = append(p.Waiting, c.from)
	}
	s.record(tkKey(tkPayPrefix, c.ID), encodePay(p))
	s.debit(r, a, c.Account, amount, p.Attempt)
	c.deferred = true
}

// refusal is err as the *ledger.Error a client hears.
func refusal(r *tickets.Reservation, err error) *ledger.Error {
	var e *ledger.Error
	if errors.As(err, &e) {
		return e
	}
	return tickets.Refusal(r, err)
}

// debit forwards the transfer of a payment attempt to the payer's
// partition.
func (s *clusterShard) debit(r *tickets.Reservation, a *clusterArea, account string, amount int64, attempt uint32) {
	w, _ := ledgerengine.Encode(&ledgerengine.Transfer{ // a ledger command always encodes
		Req: ledger.TransferRequest{
			ID: tickets.PaymentID(r.ID, attempt), From: account, To: a.event.Organizer, Amount: amount,
			Memo: "reservation " + r.ID,
		},
		Currency: a.currency,
	})
	s.owed = append(s.owed, engine.Forward{Shard: s.partitionOf(account), Cmd: &Debit{Transfer: w, Area: s.partitionOf(r.ID), ID: r.ID, Attempt: attempt}})
}

// debitOutcome is a payment's answer by its debit's outcome, b: the
// ledger's refusal, or its fault.
func debitOutcome(id string, b []byte) *Pay {
	out := &Pay{ID: id}
	var t ledgerengine.Transfer
	if err := ledgerengine.DecodeOutcome(&t, b); err != nil {
		out.Fault = "decoding the debit's outcome: " + err.Error()
		return out
	}
	if t.Err != nil && !errors.As(t.Err, &out.Err) {
		out.Fault = t.Err.Error()
	}
	return out
}

// payEnd settles the payment attempt in flight by its debit's outcome
// (step 3) and answers the nodes waiting for it.
func (s *clusterShard) payEnd(c *PayEnd, now time.Time) {
	r, _ := s.reservation(c.ID)
	p := s.pays[c.ID]
	if r == nil || p == nil || !p.Paying || p.Attempt != c.Attempt {
		return // not the attempt in flight: not reached, each step is applied once
	}
	out := debitOutcome(c.ID, c.Ledger)
	waiting := p.Waiting
	if out.Err == nil && out.Fault == "" {
		s.paid(r, p, p.Began, now)
	} else {
		p.Paying, p.Waiting = false, nil
		s.record(tkKey(tkPayPrefix, r.ID), encodePay(p))
		s.desk.Thaw(r.ID, now)
		s.settle()
	}
	out.Reservation = s.snapshot(c.ID)
	for _, to := range waiting {
		s.answer(to, out)
	}
}

// paid marks r paid by attempt p, begun at began within the hold, and
// forgets the payment.
func (s *clusterShard) paid(r *tickets.Reservation, p *payState, began, now time.Time) {
	if _, err := s.desk.PayFrozen(r.ID, tickets.PaymentID(r.ID, p.Attempt), began, now); err != nil {
		panic("ticketengine: paying a frozen hold: " + err.Error()) // checked when it froze
	}
	delete(s.pays, r.ID)
	s.forget(tkKey(tkPayPrefix, r.ID))
	s.settle()
}

// Debit is step 2's command, for the payer's partition: the debit, a
// ledger transfer (Transfer, the ledger's wire command), whose outcome
// goes on to the reservation's partition (End) instead of a reply.
type Debit struct {
	Transfer []byte
	// Area is the reservation's partition; ID and Attempt name the
	// attempt.
	Area    int
	ID      string
	Attempt uint32
}

// Encode encodes d for the payer's partition.
func (d *Debit) Encode() []byte {
	e := codec.Encoder{}
	e.String(string(d.Transfer))
	e.Uvarint(uint64(d.Area))
	e.String(d.ID)
	e.Uvarint(uint64(d.Attempt))
	return e.B
}

// DecodeDebit decodes a Debit Encode encoded.
func DecodeDebit(b []byte) (*Debit, error) {
	d := codec.Decoder{B: b}
	out := &Debit{Transfer: d.Bytes(), Area: int(d.Uvarint()), ID: d.Str(), Attempt: uint32(d.Uvarint())}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("ticketengine: decoding a payment's debit: %w", err)
	}
	return out, nil
}

// End is step 3's command, for partition Area: the debit's outcome, the
// ledger's wire outcome.
func (d *Debit) End(outcome []byte) Command {
	return &PayEnd{ID: d.ID, Attempt: d.Attempt, Ledger: outcome}
}
