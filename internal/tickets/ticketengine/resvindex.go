package ticketengine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/front"
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
	stripes [indexStripes]resvStripe
	parked  atomic.Int64 // readers waiting right now
	areas   *areaTable
	// retention and genBytes bound each generation of settled
	// reservations; kept and forgotten count those kept and dropped;
	// expired is when expire last ran (unix nanoseconds).
	retention time.Duration
	genBytes  int64
	kept      atomic.Int64
	forgotten atomic.Int64
	expired   atomic.Int64
	// wake, when set, is called when a settled reservation is kept where
	// none were, so that expire gets scheduled.
	wake func()
	// disk, when set, reads a settled reservation that is no longer in
	// memory from storage.
	disk func(uuid.UUID) (*tickets.Reservation, bool)
}

type resvStripe struct {
	mu sync.Mutex
	// m holds the undecided reservations and those holding seats.
	m map[uuid.UUID]resvSlot
	// settled holds the settled ones (failed, cancelled, expired) while
	// they are kept (outcomes.go): settled[0] is the current generation,
	// settled[1] the previous one.
	settled [2]settledGen
}

// resvSlot is one reservation: res is the committed snapshot of a decided
// one (nil while undecided; a stored snapshot is never changed, only
// replaced), and wait is closed and cleared when a decision is stored.
type resvSlot struct {
	res  *tickets.Reservation
	wait chan struct{}
}

// areaTable numbers every area, so records can name one without a
// pointer. It only grows; readers load it without locks.
type areaTable struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*areaState]
}

func (t *areaTable) add(a *areaState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var next []*areaState
	if cur := t.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	a.index = uint32(len(next))
	next = append(next, a)
	t.list.Store(&next)
}

func (t *areaTable) at(i uint32) *areaState { return (*t.list.Load())[i] }

// indexStripes is the number of the index's stripes.
const indexStripes = 256

// newResvIndex returns an index keeping settled reservations at least
// retention, in at most memBytes (estimated).
func newResvIndex(areas *areaTable, retention time.Duration, memBytes int64) *resvIndex {
	x := &resvIndex{areas: areas, retention: retention, genBytes: memBytes / (2 * indexStripes)}
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

// store publishes r, a reservation of area a (nil if unknown), as
// committed, and wakes its waiters. r must not be changed afterwards.
func (x *resvIndex) store(id uuid.UUID, r *tickets.Reservation, a *areaState) {
	s := x.stripe(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[id].wait; w != nil {
		close(w)
	}
	if !settled(r) {
		s.m[id] = resvSlot{res: r}
		return
	}
	delete(s.m, id)
	if s.addSettled(id, r, a, time.Now(), x) && x.wake != nil {
		x.wake()
	}
}

// load returns the committed state of id: nil and true while undecided,
// false when there is no such reservation. The caller must not change it.
func (x *resvIndex) load(id uuid.UUID) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	r, ok := s.m[id].res, false
	if _, ok = s.m[id]; !ok {
		r, ok = s.findSettled(id, x.areas)
	}
	s.mu.Unlock()
	if ok || x.disk == nil {
		return r, ok
	}
	return x.disk(id) // settled and forgotten, or never stored
}

// await returns id's state once it is decided, or undecided (nil, true)
// after timeout or when ctx ends.
func (x *resvIndex) await(ctx context.Context, id uuid.UUID, timeout time.Duration) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	slot, ok := s.m[id]
	if !ok || slot.res != nil {
		s.mu.Unlock()
		return x.load(id)
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
	front.Park(ctx)
	select {
	case <-wait:
	case <-timer.C:
	case <-ctx.Done():
	}
	return x.load(id)
}
