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

// resvSlot is one reservation: res is its committed snapshot (nil while
// undecided; never changed once stored, only replaced), wait is closed and
// cleared when a snapshot is stored.
type resvSlot struct {
	res  *tickets.Reservation
	wait chan struct{}
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
	s := x.stripe(id)
	s.mu.Lock()
	if w := s.m[id].wait; w != nil {
		close(w)
	}
	s.m[id] = resvSlot{res: r}
	s.mu.Unlock()
}

// load returns the committed snapshot of id: nil and true while undecided,
// false when there is no such reservation.
func (x *resvIndex) load(id uuid.UUID) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	slot, ok := s.m[id]
	s.mu.Unlock()
	return slot.res, ok
}

// await returns id's snapshot once it is decided, or undecided (nil, true)
// after timeout or when ctx ends.
func (x *resvIndex) await(ctx context.Context, id uuid.UUID, timeout time.Duration) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	slot, ok := s.m[id]
	if !ok || slot.res != nil {
		s.mu.Unlock()
		return slot.res, ok
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
