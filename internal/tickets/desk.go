package tickets

import (
	"container/heap"
	"errors"
	"time"
)

// ErrUnknown is the answer of a Desk asked to pay or cancel a reservation
// that holds no seats at it.
var ErrUnknown = errors.New("reservation holds no seats")

// Desk is one shard's box office: the reservations holding seats in the
// areas the shard owns, their hold deadlines, the payments in flight, and
// what the current batch changed. Like ledger.Book it is plain
// deterministic code driven by one goroutine, the same in both modes; the
// shard persists Changes after each batch, publishes them, then calls
// Reset.
//
// Invariant: every seat taken in an Area the desk serves belongs to exactly
// one Reserved or Paid reservation in held, and every such reservation's
// seats are taken.
type Desk struct {
	held map[string]*holding
	// byArea holds the same holdings per area, for Holders.
	byArea map[*Area]map[*holding]struct{}
	holds  holdHeap
	// changed are the reservations the batch decided or moved, in order.
	changed []*Reservation
	// decided finds a reservation decided earlier, for retried requests.
	decided func(id string) (*Reservation, bool)
}

// holding is a reservation that holds seats, with the area they are in.
// A frozen one is being paid: its hold neither expires nor is cancelled
// until the payment ends (Thaw or PayFrozen).
type holding struct {
	res    *Reservation
	area   *Area
	frozen bool
}

// ErrPaying is the answer of a Desk asked to cancel a reservation whose
// payment is in flight.
var ErrPaying = errors.New("reservation is being paid")

// NewDesk returns an empty desk. decided finds a reservation the shard
// decided earlier that no longer holds seats (failed, cancelled,
// expired), so that a retried request is answered with its first
// decision; nil if the shard keeps none.
func NewDesk(decided func(id string) (*Reservation, bool)) *Desk {
	return &Desk{held: make(map[string]*holding), byArea: make(map[*Area]map[*holding]struct{}), decided: decided}
}

// Decided returns reservation id if the desk decided it: held, or known to
// decided.
func (d *Desk) Decided(id string) (*Reservation, bool) {
	if h, ok := d.held[id]; ok {
		return h.res, true
	}
	if d.decided != nil {
		if r, ok := d.decided(id); ok && r != nil && r.Final() {
			return r, true
		}
	}
	return nil, false
}

// Reserve decides the Processing reservation r against area a of event ev
// at now, and returns the decision. In order: an unknown area (a nil)
// fails it INVALID_EVENT_AREA, the sale window NOT_OPEN or CLOSED, a claim
// its user's seat limit refused (overLimit) SEAT_LIMIT; otherwise it takes
// the seats and holds them for the event's hold time, or fails for the
// seats. Either way r is in Changes. A request decided already (a retried
// request: the same id) is not decided again: its first decision is
// returned and nothing changes.
func (d *Desk) Reserve(ev *EventSpec, a *Area, r *Reservation, now time.Time, overLimit bool) *Reservation {
	if first, ok := d.Decided(r.ID); ok {
		return first
	}
	var seats []Seat
	var reason Reason
	var detail string
	switch {
	case a == nil || ev == nil:
		reason, detail = ReasonInvalidEventArea, NoAreaDetail(r.EventID, r.AreaID)
	default:
		if reason, detail = ev.OpenAt(now); reason == "" && overLimit {
			reason, detail = ev.CheckSeatLimit(ev.PerUserSeatLimit, r.SeatsAsked())
		}
	}
	if reason == "" {
		seats, reason, detail = a.Reserve(ReserveRequest{
			EventID: r.EventID, AreaID: r.AreaID, Kind: r.Kind, NumOfSeats: r.NumOfSeats, Seats: r.Seats,
		})
	}
	hold := time.Duration(0)
	if ev != nil {
		hold = ev.EffectiveHoldTime()
	}
	if err := r.Decide(now, hold, seats, reason, detail); err != nil {
		panic("tickets: Desk.Reserve: " + err.Error())
	}
	d.changed = append(d.changed, r)
	if r.State == Reserved {
		d.hold(r, a)
	}
	return r
}

// Load puts back a stored reservation on restart: seats taken and hold
// scheduled if it holds seats. It is not a change.
func (d *Desk) Load(r *Reservation, a *Area) {
	if !r.HoldsSeats() {
		return
	}
	a.Take(r.Seats)
	d.hold(r, a)
}

// LoadFrozen marks loaded reservation id's payment in flight, on restart.
func (d *Desk) LoadFrozen(id string) {
	if h, ok := d.held[id]; ok {
		h.frozen = true
	}
}

func (d *Desk) hold(r *Reservation, a *Area) {
	h := &holding{res: r, area: a}
	d.held[r.ID] = h
	if d.byArea[a] == nil {
		d.byArea[a] = make(map[*holding]struct{})
	}
	d.byArea[a][h] = struct{}{}
	if r.State == Reserved {
		heap.Push(&d.holds, h)
	}
}

// Pay marks reservation id Paid by paymentID. The error is a
// *TransitionError (ErrPaid for a replay), or ErrUnknown if the desk holds
// no such reservation.
func (d *Desk) Pay(id, paymentID string, now time.Time) (*Reservation, error) {
	h, ok := d.held[id]
	if !ok {
		return nil, ErrUnknown
	}
	if err := h.res.Pay(now, paymentID); err != nil {
		return h.res, err
	}
	d.changed = append(d.changed, h.res)
	return h.res, nil
}

// Cancel gives reservation id's seats back. Errors as for Pay.
func (d *Desk) Cancel(id string, now time.Time) (*Reservation, error) {
	h, ok := d.held[id]
	if !ok {
		return nil, ErrUnknown
	}
	if h.frozen {
		return h.res, &TransitionError{ID: id, Action: ActionCancel, State: h.res.State, Err: ErrPaying}
	}
	seats, err := h.res.Cancel(now)
	if err != nil {
		return h.res, err
	}
	d.release(h, seats)
	return h.res, nil
}

// Freeze begins paying held reservation id at now: its hold is frozen
// until the payment ends. The error is as for Pay; a frozen hold's
// ErrPaying.
func (d *Desk) Freeze(id string, now time.Time) (*Reservation, error) {
	h, ok := d.held[id]
	switch {
	case !ok:
		return nil, ErrUnknown
	case h.frozen:
		return h.res, &TransitionError{ID: id, Action: ActionPay, State: h.res.State, Err: ErrPaying}
	}
	if err := h.res.CheckPay(now); err != nil {
		return h.res, err
	}
	h.frozen = true
	return h.res, nil
}

// Frozen reports whether reservation id's payment is in flight.
func (d *Desk) Frozen(id string) bool {
	h, ok := d.held[id]
	return ok && h.frozen
}

// PayFrozen ends the payment in flight of reservation id, begun at began:
// Paid by paymentID at now.
func (d *Desk) PayFrozen(id, paymentID string, began, now time.Time) (*Reservation, error) {
	h, ok := d.held[id]
	if !ok || !h.frozen {
		return nil, ErrUnknown
	}
	h.frozen = false
	if err := h.res.Pay(began, paymentID); err != nil { // checked when it froze
		return h.res, err
	}
	h.res.UpdatedAt = now
	d.changed = append(d.changed, h.res)
	return h.res, nil
}

// Thaw ends the payment in flight of reservation id without paying: the
// hold goes on, or expires at now if its time came meanwhile.
func (d *Desk) Thaw(id string, now time.Time) {
	h, ok := d.held[id]
	if !ok || !h.frozen {
		return
	}
	h.frozen = false
	if now.Before(h.res.HoldUntil) {
		heap.Push(&d.holds, h)
		return
	}
	if seats, err := h.res.Expire(now); err == nil {
		d.release(h, seats)
	}
}

// Expire ends every unpaid hold whose time has come.
func (d *Desk) Expire(now time.Time) {
	for d.holds.Len() > 0 && !now.Before(d.holds[0].res.HoldUntil) {
		h := heap.Pop(&d.holds).(*holding)
		if h.frozen {
			continue // Thaw puts it back
		}
		// Paid or cancelled holds stay in the heap until they surface.
		if seats, err := h.res.Expire(now); err == nil {
			d.release(h, seats)
		}
	}
}

func (d *Desk) release(h *holding, seats []Seat) {
	h.area.Release(seats)
	delete(d.held, h.res.ID)
	delete(d.byArea[h.area], h)
	d.changed = append(d.changed, h.res)
}

// NextExpiry is the earliest hold deadline, or zero if nothing is held
// unpaid.
func (d *Desk) NextExpiry() time.Time {
	for d.holds.Len() > 0 && (d.holds[0].res.State != Reserved || d.holds[0].frozen) {
		heap.Pop(&d.holds)
	}
	if d.holds.Len() == 0 {
		return time.Time{}
	}
	return d.holds[0].res.HoldUntil
}

// Holders returns the reservations holding seats in area a.
func (d *Desk) Holders(a *Area) []*Reservation {
	out := make([]*Reservation, 0, len(d.byArea[a]))
	for h := range d.byArea[a] {
		out = append(out, h.res)
	}
	return out
}

// Changes are the reservations decided or moved since the last Reset, in
// order; a reservation moved twice appears twice.
func (d *Desk) Changes() []*Reservation { return d.changed }

// Reset forgets the batch's changes once they are stored and published.
func (d *Desk) Reset() {
	clear(d.changed)
	d.changed = d.changed[:0]
}

// holdHeap orders unpaid holds by deadline.
type holdHeap []*holding

func (h holdHeap) Len() int           { return len(h) }
func (h holdHeap) Less(i, j int) bool { return h[i].res.HoldUntil.Before(h[j].res.HoldUntil) }
func (h holdHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *holdHeap) Push(x any)        { *h = append(*h, x.(*holding)) }
func (h *holdHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}
