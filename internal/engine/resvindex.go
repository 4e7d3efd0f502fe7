package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/tickets"
)

// resvIndex finds every reservation by id for readers: the committed
// snapshot of each decided one, and a slot for each still undecided so that
// readers can wait for it.
//
// Waiting costs no polling and almost no memory: a reader that finds its
// reservation undecided parks on a channel made for that slot on demand, and
// the shard that commits the decision closes it. A million parked readers
// cost a million small channels; nobody is woken for another's reservation.
type resvIndex struct {
	stripes [256]resvStripe
	parked  atomic.Int64 // readers waiting right now
}

type resvStripe struct {
	mu sync.Mutex
	m  map[uuid.UUID]resvSlot
}

// resvSlot is one reservation: res is the committed snapshot of one that
// held seats, fail the record of one that failed (both nil while
// undecided; a stored snapshot is never changed, only replaced), and wait
// is closed and cleared when a decision is stored.
type resvSlot struct {
	res  *tickets.Reservation
	fail *failure
	wait chan struct{}
}

// failure is a failed reservation, kept compactly: a flash sale fails most
// requests (840,000 of 1,000,000 in seed 002's test), and a whole
// tickets.Reservation with its id and detail strings took ~480 bytes where
// this takes ~150. The id is the map key; event and area names are the
// event's own strings when they exist; the detail of the commonest
// failure, no block of n seats, is rebuilt on reading.
type failure struct {
	user, event, area string
	detail            string // "" when rebuilt from the rest
	seats             []tickets.Seat
	created           int64
	n                 int32
	kind              tickets.Kind
	reason            tickets.Reason
}

func compact(r *tickets.Reservation) *failure {
	f := &failure{
		user: r.UserID, event: r.EventID, area: r.AreaID, detail: r.Detail, seats: r.Seats,
		created: r.CreatedAt.UnixNano(), n: int32(r.NumOfSeats), kind: r.Kind, reason: r.FailedReason,
	}
	if f.reason == tickets.ReasonNotAvailable && f.kind == tickets.Random && r.Detail == tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID) {
		f.detail = ""
	}
	return f
}

func (f *failure) expand(id uuid.UUID) *tickets.Reservation {
	r := &tickets.Reservation{
		ID: id.String(), UserID: f.user, EventID: f.event, AreaID: f.area, NumOfSeats: int(f.n),
		Kind: f.kind, Seats: f.seats, State: tickets.Failed, FailedReason: f.reason, Detail: f.detail,
		CreatedAt: time.Unix(0, f.created).UTC(),
	}
	r.UpdatedAt = r.CreatedAt
	if r.Detail == "" {
		r.Detail = tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
	}
	return r
}

func (slot resvSlot) decided(id uuid.UUID) *tickets.Reservation {
	if slot.fail != nil {
		return slot.fail.expand(id)
	}
	return slot.res
}

func newResvIndex() *resvIndex {
	x := &resvIndex{}
	for i := range x.stripes {
		x.stripes[i].m = make(map[uuid.UUID]resvSlot)
	}
	return x
}

func (x *resvIndex) stripe(id uuid.UUID) *resvStripe {
	// Reservation ids are random (v4), so any byte spreads them evenly.
	return &x.stripes[id[15]]
}

// open adds an undecided reservation.
func (x *resvIndex) open(id uuid.UUID) {
	s := x.stripe(id)
	s.mu.Lock()
	s.m[id] = resvSlot{}
	s.mu.Unlock()
}

// drop forgets an undecided reservation that was never queued.
func (x *resvIndex) drop(id uuid.UUID) {
	s := x.stripe(id)
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// store publishes r's committed state and wakes its waiters. r must not be
// changed afterwards.
func (x *resvIndex) store(id uuid.UUID, r *tickets.Reservation) {
	next := resvSlot{res: r}
	if r.State == tickets.Failed {
		next = resvSlot{fail: compact(r)}
	}
	s := x.stripe(id)
	s.mu.Lock()
	if w := s.m[id].wait; w != nil {
		close(w)
	}
	s.m[id] = next
	s.mu.Unlock()
}

// load returns the committed state of id: nil and true while undecided,
// false when there is no such reservation. The caller must not change it.
func (x *resvIndex) load(id uuid.UUID) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	slot, ok := s.m[id]
	s.mu.Unlock()
	return slot.decided(id), ok
}

// await returns id's state once it is decided, or undecided (nil, true)
// after timeout or when ctx ends.
func (x *resvIndex) await(ctx context.Context, id uuid.UUID, timeout time.Duration) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	slot, ok := s.m[id]
	if !ok || slot.res != nil || slot.fail != nil {
		s.mu.Unlock()
		return slot.decided(id), ok
	}
	if slot.wait == nil {
		slot.wait = make(chan struct{})
		s.m[id] = slot
	}
	wait := slot.wait
	s.mu.Unlock()

	x.parked.Add(1)
	defer x.parked.Add(-1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-wait:
	case <-timer.C:
	case <-ctx.Done():
	}
	return x.load(id)
}
