package ticketengine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
)

// The Engine's ticketing API (docs/API.md). Reservations are decided by the
// shard owning their area and answered from the reservation index once
// durable; events and availability are read from published state.

// paymentPrefix starts the id of the pending ledger transfer that pays a
// reservation (tickets.PaymentID); the reservation records the attempt
// that paid it.
const paymentPrefix = ledger.PaymentPrefix

// newPaymentID names a new payment attempt of reservation, with a random
// attempt number: a single process does not count attempts across
// restarts.
func newPaymentID(reservation string) string {
	return tickets.PaymentID(reservation, rand.Uint32())
}

// paymentReservation is the reservation a payment id pays, or "".
func paymentReservation(payment string) string {
	rest, ok := strings.CutPrefix(payment, paymentPrefix)
	if !ok || len(rest) < 36 {
		return ""
	}
	return rest[:36]
}

// CreateEvent creates an event. created is false when an identical event
// existed (a replay); an event of the same name that differs is a conflict.
func (t *Tickets) CreateEvent(ctx context.Context, spec tickets.EventSpec) (tickets.EventSpec, bool, error) {
	if err := spec.Validate(); err != nil {
		return tickets.EventSpec{}, false, err
	}
	t.creating.Lock()
	defer t.creating.Unlock()
	if ev, ok := t.event(spec.EventName); ok {
		if ev.spec.SameAs(&spec) {
			return ev.spec, false, nil
		}
		return tickets.EventSpec{}, false, ledger.Errorf(tickets.CodeEventExists, "event %s exists with other settings", spec.EventName)
	}
	if spec.Organizer != "" {
		if _, err := t.ledger.Account(ctx, spec.Organizer); err != nil {
			return tickets.EventSpec{}, false, err
		}
	}
	if err := t.db.PutEvent(&spec); err != nil {
		return tickets.EventSpec{}, false, err
	}
	t.addEvent(spec)
	return spec, true, nil
}

// Event returns an event and its availability.
func (t *Tickets) Event(name string) (tickets.EventStatus, error) {
	ev, ok := t.event(name)
	if !ok {
		return tickets.EventStatus{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s not found", name)
	}
	st := tickets.EventStatus{Spec: ev.spec, Areas: make([]tickets.AreaStatus, len(ev.list))}
	var last int64
	for i, a := range ev.list {
		soldOut := a.soldOutAt.Load()
		st.Areas[i] = tickets.AreaStatus{Spec: a.spec, Available: int(a.available.Load()), SoldOutAt: fromNanos(soldOut)}
		if soldOut == 0 {
			last = math.MinInt64
		}
		last = max(last, soldOut)
	}
	if last > 0 {
		st.SoldOutAt = fromNanos(last)
	}
	return st, nil
}

// Events lists every event's availability.
func (t *Tickets) Events() []tickets.EventStatus {
	t.mu.RLock()
	names := make([]string, 0, len(t.events))
	for name := range t.events {
		names = append(names, name)
	}
	t.mu.RUnlock()
	out := make([]tickets.EventStatus, 0, len(names))
	for _, name := range names {
		if st, err := t.Event(name); err == nil {
			out = append(out, st)
		}
	}
	return out
}

// InspectArea returns an area's seat map and holders. It goes through the
// area's shard, so it reflects every reservation committed before it.
func (t *Tickets) InspectArea(ctx context.Context, event, area string) (tickets.AreaSeats, error) {
	a, ok := t.area(event, area)
	if !ok {
		return tickets.AreaSeats{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s has no area %s", event, area)
	}
	c := &Inspect{Event: event, Area: area}
	if err := t.do(ctx, a.shard, c); err != nil {
		return tickets.AreaSeats{}, err
	}
	return *c.Seats, nil
}

// inspect reads an area's seat map and holders.
func (s *shard) inspect(event, area string) *tickets.AreaSeats {
	a, _ := s.t.area(event, area)
	out := &tickets.AreaSeats{Spec: a.spec, Available: a.seats.Free(), SeatMap: a.seats.SeatMap()}
	for _, r := range s.desk.Holders(a.seats) {
		out.Holders = append(out.Holders, *r)
	}
	return out
}

// Reserve files a reservation request by user and returns its id at once;
// the owning shard decides it, and Reservation waits for the decision.
// Requests that cannot succeed — unknown area, outside the sale window,
// over the user's limit, sold out — are decided here without queueing.
// The error is only for a request that could not be filed (overload).
func (t *Tickets) Reserve(userID string, req tickets.ReserveRequest) (string, error) {
	now := time.Now().UTC()
	id := uuid.New()
	r := tickets.NewReservation(id.String(), userID, req, now)
	a, ok := t.area(req.EventID, req.AreaID)
	if !ok {
		return t.failNow(id, r, nil, now, tickets.ReasonInvalidEventArea, tickets.NoAreaDetail(req.EventID, req.AreaID))
	}
	ev := &a.event.spec
	// Share the event's strings: the request's copies would live as long
	// as the reservation, a million times over in a flash sale.
	r.EventID, r.AreaID = ev.EventName, a.spec.AreaID
	if reason, detail := ev.OpenAt(now); reason != "" {
		return t.failNow(id, r, a, now, reason, detail)
	}
	// The desk's order (tickets.Desk.Reserve): the seat limit, then the
	// seats, of which a sold-out area is the first check.
	limited := ev.PerUserSeatLimit > 0
	if limited {
		if reason, detail := t.users.claim(ev, r); reason != "" {
			return t.failNow(id, r, a, now, reason, detail)
		}
	}
	if r.NumOfSeats > 0 && r.NumOfSeats <= tickets.MaxSeatsPerReservation && a.available.Load() < int64(r.NumOfSeats) {
		if limited {
			t.users.give(r)
		}
		return t.failNow(id, r, a, now, tickets.ReasonNotAvailable, tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID))
	}
	t.index.open(id)
	if err := t.port.Post(a.shard, &Reserve{filed: r}); err != nil {
		t.index.drop(id)
		if limited {
			t.users.give(r)
		}
		return "", ledgerengine.QueueError(err)
	}
	return id.String(), nil
}

// decided is the reservation id if it is decided, for the desks: a
// retried request is answered with its first decision.
func (t *Tickets) decided(id string) (*tickets.Reservation, bool) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return nil, false
	}
	return t.index.load(uid)
}

// failNow decides r as failed without a shard. It is published at once and
// never stored: it changed nothing.
func (t *Tickets) failNow(id uuid.UUID, r *tickets.Reservation, a *areaState, now time.Time, reason tickets.Reason, detail string) (string, error) {
	if err := r.Decide(now, 0, nil, reason, detail); err != nil {
		panic("engine: failNow: " + err.Error())
	}
	t.outcome(r)
	t.index.store(id, r, a)
	return id.String(), nil
}

// Reservation returns reservation id once it is decided, waiting up to
// timeout; an undecided reservation comes back in state PROCESSING.
func (t *Tickets) Reservation(ctx context.Context, id string, timeout time.Duration) (tickets.Reservation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	}
	r, ok := t.index.load(uid)
	if ok && r == nil && timeout > 0 {
		r, ok = t.index.await(ctx, uid, timeout)
	}
	switch {
	case !ok:
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	case r == nil:
		return tickets.Reservation{ID: id, State: tickets.Processing}, nil
	}
	return *r, nil
}

// ParkedPolls is the number of readers waiting for a reservation.
func (t *Tickets) ParkedPolls() int64 { return t.index.parked.Load() }

// PayReservation pays a reserved hold from account to the event's
// organizer: a pending ledger transfer of price × seats, then the
// reservation marked paid, then the transfer posted. If the hold cannot be
// paid any more, the transfer is voided. Paying a paid reservation again
// answers it as it is.
//
// A crash between the steps leaves a pending payment; Open settles it by
// the reservation's stored state (posted if paid, voided otherwise).
func (t *Tickets) PayReservation(ctx context.Context, id, account string) (tickets.Reservation, error) {
	ctx = context.WithoutCancel(ctx) // once money moves, finish the sequence
	snap, a, err := t.heldReservation(id)
	if err != nil || snap.State == tickets.Paid {
		return snap, err
	}
	ev := &a.event.spec
	amount, err := tickets.Charge(ev, &snap, time.Now())
	if err != nil {
		return snap, err
	}
	payment := newPaymentID(snap.ID)
	if amount > 0 {
		_, _, err := t.ledger.Transfer(ctx, ledger.TransferRequest{
			ID: payment, From: account, To: ev.Organizer, Amount: amount, Pending: true,
			Memo: "reservation " + snap.ID,
		})
		if err != nil {
			return snap, err
		}
	}
	c := &cmdPay{id: snap.ID, paymentID: payment}
	if err = t.do(ctx, a.shard, c); err == nil {
		err = c.err
	}
	if amount > 0 {
		t.settlePayment(ctx, payment, err == nil)
	}
	if errors.Is(err, tickets.ErrPaid) {
		return c.reservation, nil // paid meanwhile by another attempt
	}
	if err != nil {
		return t.stateError(id, err)
	}
	return c.reservation, nil
}

// CancelReservation gives a reserved hold's seats back; cancelling a
// cancelled reservation answers it as it is.
func (t *Tickets) CancelReservation(ctx context.Context, id string) (tickets.Reservation, error) {
	snap, a, err := t.heldReservation(id)
	if err != nil || snap.State == tickets.Cancelled {
		return snap, err
	}
	c := &Cancel{ID: snap.ID}
	if err := t.do(ctx, a.shard, c); err != nil {
		return t.stateError(id, err)
	}
	switch {
	case c.Reservation == nil: // left memory meanwhile
		return t.stateError(id, tickets.ErrUnknown)
	case c.Err != nil:
		snap, _ = t.Reservation(ctx, id, 0)
		return snap, c.Err
	}
	return *c.Reservation, nil
}

// do queues cmd on shard and waits for the round that applies it.
func (t *Tickets) do(ctx context.Context, shard int, cmd engine.Command) error {
	return ledgerengine.QueueError(t.port.Do(ctx, shard, cmd))
}

// heldReservation finds a decided reservation and its area.
func (t *Tickets) heldReservation(id string) (tickets.Reservation, *areaState, error) {
	snap, err := t.Reservation(context.Background(), id, 0)
	if err != nil {
		return snap, nil, err
	}
	if !snap.Final() {
		return snap, nil, ledger.Errorf(tickets.CodeNotPayable, "reservation %s is not decided yet", id)
	}
	a, ok := t.area(snap.EventID, snap.AreaID)
	if !ok { // failed for an unknown event or area
		return snap, nil, ledger.Errorf(tickets.CodeNotPayable, "reservation %s is %s and holds no seats", id, snap.State)
	}
	return snap, a, nil
}

// stateError answers a pay or cancel the desk refused, with the
// reservation's committed state.
func (t *Tickets) stateError(id string, err error) (tickets.Reservation, error) {
	snap, _ := t.Reservation(context.Background(), id, 0)
	var te *tickets.TransitionError
	if errors.As(err, &te) || errors.Is(err, tickets.ErrUnknown) {
		named := snap
		named.ID = id
		return snap, tickets.Refusal(&named, err)
	}
	return snap, err
}

// settlePayment posts or voids a pending payment. Failure leaves it
// pending for the next start to settle, which is logged.
func (t *Tickets) settlePayment(ctx context.Context, payment string, post bool) {
	var err error
	if post {
		_, err = t.ledger.PostPending(ctx, payment, 0)
	} else {
		_, err = t.ledger.VoidPending(ctx, payment)
	}
	if err != nil && ledger.CodeOf(err) != ledger.CodeTransferNotPending {
		t.log.Error("settling reservation payment", "payment", payment, "post", post, "err", err)
	}
}

// publishReservations makes a batch's decisions visible, from the shard
// that made them (or a coordinator holding every shard parked).
func (t *Tickets) publishReservations(changed []*tickets.Reservation) {
	if len(changed) == 0 {
		return
	}
	now := time.Now()
	for _, r := range changed {
		a, _ := t.area(r.EventID, r.AreaID)
		publishArea(a, now)
		ev := &a.event.spec
		if ev.PerUserSeatLimit > 0 && !r.HoldsSeats() {
			t.users.give(r)
		}
		t.outcome(r)
		t.index.store(uuid.MustParse(r.ID), snapshot(r), a)
	}
}

// snapshot copies r for readers; the desk goes on changing r itself.
// Failed reservations never change again and are shared as they are.
func snapshot(r *tickets.Reservation) *tickets.Reservation {
	if r == nil || r.State == tickets.Failed {
		return r
	}
	cp := *r
	return &cp
}

// loadTickets puts every stored event and reservation back, before the
// shards start.
func (t *Tickets) loadTickets() error {
	err := t.db.EachEvent(func(spec tickets.EventSpec) error {
		t.addEvent(spec)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	soldAt := make(map[*areaState]time.Time)
	err = t.db.EachReservation(func(r *tickets.Reservation) error {
		a, ok := t.area(r.EventID, r.AreaID)
		if !ok {
			return fmt.Errorf("reservation %s: no area %s/%s", r.ID, r.EventID, r.AreaID)
		}
		t.shards[a.shard].desk.Load(r, a.seats)
		if r.HoldsSeats() {
			soldAt[a] = maxTime(soldAt[a], r.UpdatedAt)
			if a.event.spec.PerUserSeatLimit > 0 {
				t.users.add(r)
			}
		}
		if !settled(r) { // the settled ones are read from storage
			t.index.store(uuid.MustParse(r.ID), snapshot(r), a)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load reservations: %w", err)
	}
	for _, ev := range t.events {
		for _, a := range ev.list {
			publishArea(a, soldAt[a])
		}
	}
	return nil
}

// copyOf is *r, or the zero reservation for nil.
func copyOf(r *tickets.Reservation) tickets.Reservation {
	if r == nil {
		return tickets.Reservation{}
	}
	return *r
}

func fromNanos(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
