package node

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
)

// Paying a reservation in a cluster: a chain of three steps.
//
//  1. pay, on the reservation's (its area's) partition: a RESERVED
//     reservation whose hold has not run out begins a payment attempt. The
//     hold is frozen (it does not expire and cannot be cancelled while the
//     payment is in flight), and the debit is forwarded to the payer's
//     partition: a transfer of price × seats to the event's organizer,
//     with the id pay-<reservation>-<attempt>.
//  2. the payer's partition applies the transfer as any other (its credit
//     forwarded to the organizer's partition) and forwards its outcome
//     back, in the same transaction.
//  3. pay_end, on the reservation's partition: a transfer made marks the
//     reservation PAID; a transfer refused (insufficient funds, an unknown
//     account) unfreezes the hold, which expires at once if its time has
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
	Attempt int  `json:"attempt"`
	Paying  bool `json:"paying"`
	// Began is when the attempt in flight began, within the hold.
	Began time.Time `json:"began"`
	// Waiters are the nodes waiting for the attempt in flight.
	Waiters []replyAddr `json:"waiters,omitempty"`
}

// pay begins paying reservation c.ID from c.Account (step 1): the desk
// freezes its hold, and the debit goes to the payer's partition.
func (s *ticketSlice) pay(c *ticketCommand, now time.Time) {
	r, ok := s.resv[c.ID]
	switch {
	case !ok:
		return // not found
	case r.State == tickets.Paid:
		c.Reservation = s.snapshot(c.ID) // a replay
		return
	case s.desk.Frozen(c.ID):
		p := s.pays[c.ID]
		if c.from != nil {
			p.Waiters = append(p.Waiters, *c.from)
			s.record(tkKey(tkPayPrefix, c.ID), p)
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
	p.Paying, p.Began, p.Waiters = true, now, nil
	if c.from != nil {
		p.Waiters = append(p.Waiters, *c.from)
	}
	s.record(tkKey(tkPayPrefix, c.ID), p)
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
func (s *ticketSlice) debit(r *tickets.Reservation, a *tkArea, account string, amount int64, attempt int) {
	w, _ := json.Marshal(&ledgerengine.WireCommand{ // plain data always encodes
		Op: ledgerengine.OpTransfer,
		Req: &ledger.TransferRequest{
			ID: tickets.PaymentID(r.ID, uint32(attempt)), From: account, To: a.event.Organizer, Amount: amount,
			Memo: "reservation " + r.ID,
		},
		Currencies: map[string]string{a.event.Organizer: a.currency},
	})
	v, _ := json.Marshal(&paymentDebit{Transfer: w, Area: int32(s.partitionOf(r.ID)), ID: r.ID, Attempt: attempt})
	s.owe(kafkalog.Output{Kind: kafkalog.Forward, Partition: int32(s.partitionOf(account)), Value: append([]byte{workloadPayment}, v...)})
}

// payEnd settles the payment attempt in flight by its debit's outcome
// (step 3) and answers the nodes waiting for it.
func (s *ticketSlice) payEnd(c *ticketCommand, now time.Time) {
	r, p := s.resv[c.ID], s.pays[c.ID]
	if r == nil || p == nil || !p.Paying || p.Attempt != c.Attempt {
		return // not the attempt in flight: not reached, each step is applied once
	}
	var o ledgerengine.WireOutcome
	if err := json.Unmarshal(c.Ledger, &o); err != nil {
		o.Fault = "decoding the debit's outcome: " + err.Error()
	}
	out := &ticketCommand{Op: tkPay, ID: c.ID, Err: o.Err, Fault: o.Fault}
	waiters := p.Waiters
	if o.Err == nil && o.Fault == "" {
		s.paid(r, p, p.Began, now)
	} else {
		p.Paying, p.Waiters = false, nil
		s.record(tkKey(tkPayPrefix, r.ID), p)
		s.desk.Thaw(r.ID, now)
		s.settle()
	}
	out.Reservation = s.snapshot(c.ID)
	for i := range waiters {
		s.answer(&waiters[i], out)
	}
}

// paid marks r paid by attempt p, begun at began within the hold, and
// forgets the payment.
func (s *ticketSlice) paid(r *tickets.Reservation, p *payState, began, now time.Time) {
	if _, err := s.desk.PayFrozen(r.ID, tickets.PaymentID(r.ID, uint32(p.Attempt)), began, now); err != nil {
		panic("node: paying a frozen hold: " + err.Error()) // checked when it froze
	}
	delete(s.pays, r.ID)
	s.forget(tkKey(tkPayPrefix, r.ID))
	s.settle()
}

// workloadPayment marks the debit of a payment, a ledger transfer whose
// outcome goes on to the reservation's partition instead of a reply.
const workloadPayment byte = 'p'

// paymentDebit is step 2's command, on the payer's partition.
type paymentDebit struct {
	// Transfer is the debit, a ledgerengine.WireCommand.
	Transfer json.RawMessage `json:"transfer"`
	// Area is the reservation's partition; ID and Attempt name the
	// attempt.
	Area    int32  `json:"area"`
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
}

// feedPayment queues a payment's debit on the ledger's shard of its
// partition; its outcome is forwarded to the reservation's partition.
func (n *Node) feedPayment(ctx context.Context, st *state, c kafkalog.Command) (fed, error) {
	f := fed{inbox: -1}
	var d paymentDebit
	err := json.Unmarshal(c.Value[1:], &d)
	if err == nil {
		var cmd any
		if cmd, err = ledgerengine.Decode(d.Transfer); err == nil {
			f.outcome = func() []byte { return ledgerengine.Outcome(cmd) }
			f.then = d.end
			f.call, err = st.ledger.Submit(ctx, int(c.Partition), cmd)
			return f, err
		}
	}
	n.cfg.Logger.Error("cluster: dropping a malformed payment", "partition", c.Partition, "offset", c.Offset, "err", err)
	return f, nil
}

// end is step 3's command: the debit's outcome, for the reservation's
// partition.
func (d *paymentDebit) end(outcome []byte) kafkalog.Output {
	v := encodeTicket(&ticketCommand{Op: tkPayEnd, ID: d.ID, Attempt: d.Attempt, Ledger: outcome})
	return kafkalog.Output{Kind: kafkalog.Forward, Partition: d.Area, Value: v}
}
