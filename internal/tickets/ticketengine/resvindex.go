package ticketengine

import (
	"context"
	"math"
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
	areas   *areaTable
}

type resvStripe struct {
	mu sync.Mutex
	m  map[uuid.UUID]resvSlot
	// soldOut holds the commonest failure, a RANDOM request that found no
	// block of its size, in a map whose keys and values hold no pointers,
	// with the user ids in users: the GC never scans either, however many
	// hundreds of thousands of failures a flash sale leaves (840,000 of
	// 1,000,000 requests in seed 002's test). Kept as whole reservations
	// they cost ~480 bytes each and a third of the server's CPU in GC.
	soldOut map[uuid.UUID]soldOut
	users   []byte
}

// resvSlot is one reservation: res is the committed snapshot of a decided
// one (nil while undecided; a stored snapshot is never changed, only
// replaced), and wait is closed and cleared when a decision is stored.
type resvSlot struct {
	res  *tickets.Reservation
	wait chan struct{}
}

// soldOut is a RANDOM reservation of n seats in area that failed
// NOT_AVAILABLE, pointer-free: the user id is users[user:user+userLen],
// and the failure's detail is rebuilt from the rest.
type soldOut struct {
	created int64
	user    uint32
	area    uint32
	n       uint8
	userLen uint8
}

// compactable reports whether r can be kept as a soldOut record.
func compactable(r *tickets.Reservation, a *areaState) bool {
	return a != nil && r.State == tickets.Failed && r.Kind == tickets.Random && r.Seats == nil &&
		r.FailedReason == tickets.ReasonNotAvailable && r.NumOfSeats > 0 && r.NumOfSeats <= math.MaxUint8 &&
		len(r.UserID) <= math.MaxUint8 && r.EventID == a.event.spec.EventName && r.AreaID == a.spec.AreaID &&
		r.Detail == tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
}

// expand rebuilds the reservation; the stripe's lock must be held.
func (s *resvStripe) expand(id uuid.UUID, f soldOut, areas *areaTable) *tickets.Reservation {
	a := areas.at(f.area)
	r := &tickets.Reservation{
		ID: id.String(), UserID: string(s.users[f.user : f.user+uint32(f.userLen)]),
		EventID: a.event.spec.EventName, AreaID: a.spec.AreaID, NumOfSeats: int(f.n), Kind: tickets.Random,
		State: tickets.Failed, FailedReason: tickets.ReasonNotAvailable, CreatedAt: time.Unix(0, f.created).UTC(),
	}
	r.UpdatedAt = r.CreatedAt
	r.Detail = tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
	return r
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

func newResvIndex(areas *areaTable) *resvIndex {
	x := &resvIndex{areas: areas}
	for i := range x.stripes {
		x.stripes[i].m = make(map[uuid.UUID]resvSlot)
		x.stripes[i].soldOut = make(map[uuid.UUID]soldOut)
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
	if !compactable(r, a) {
		s.m[id] = resvSlot{res: r}
		return
	}
	delete(s.m, id)
	s.soldOut[id] = soldOut{created: r.CreatedAt.UnixNano(), user: uint32(len(s.users)), area: a.index,
		n: uint8(r.NumOfSeats), userLen: uint8(len(r.UserID))}
	s.users = append(s.users, r.UserID...)
}

// load returns the committed state of id: nil and true while undecided,
// false when there is no such reservation. The caller must not change it.
func (x *resvIndex) load(id uuid.UUID) (*tickets.Reservation, bool) {
	s := x.stripe(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.soldOut[id]; ok {
		return s.expand(id, f, x.areas), true
	}
	slot, ok := s.m[id]
	return slot.res, ok
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
	select {
	case <-wait:
	case <-timer.C:
	case <-ctx.Done():
	}
	return x.load(id)
}
