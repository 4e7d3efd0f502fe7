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
// areas the shard owns, their hold deadlines, and what the current batch
// changed. Like ledger.Book it is plain deterministic code driven by one
// goroutine; the shard persists Changes after each batch, publishes them,
// then calls Reset.
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
}

// holding is a reservation that holds seats, with the area they are in.
type holding struct {
	res  *Reservation
	area *Area
}

// NewDesk returns an empty desk.
func NewDesk() *Desk {
	return &Desk{held: make(map[string]*holding), byArea: make(map[*Area]map[*holding]struct{})}
}

// Reserve decides the Processing reservation r against area a of event ev at
// now: it takes the seats and holds them for the event's hold time, or fails
// r with the reason. Either way r is in Changes.
func (d *Desk) Reserve(ev *EventSpec, a *Area, r *Reservation, now time.Time) {
	reason, detail := ev.OpenAt(now)
	var seats []Seat
	if reason == "" {
		seats, reason, detail = a.Reserve(ReserveRequest{
			EventID: r.EventID, AreaID: r.AreaID, Kind: r.Kind, NumOfSeats: r.NumOfSeats, Seats: r.Seats,
		})
	}
	if err := r.Decide(now, ev.EffectiveHoldTime(), seats, reason, detail); err != nil {
		panic("tickets: Desk.Reserve: " + err.Error())
	}
	d.changed = append(d.changed, r)
	if r.State == Reserved {
		d.hold(r, a)
	}
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
	seats, err := h.res.Cancel(now)
	if err != nil {
		return h.res, err
	}
	d.release(h, seats)
	return h.res, nil
}

// Expire ends every unpaid hold whose time has come.
func (d *Desk) Expire(now time.Time) {
	for d.holds.Len() > 0 && !now.Before(d.holds[0].res.HoldUntil) {
		h := heap.Pop(&d.holds).(*holding)
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
	for d.holds.Len() > 0 && d.holds[0].res.State != Reserved {
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
