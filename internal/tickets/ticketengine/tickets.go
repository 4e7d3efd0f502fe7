package ticketengine

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
)

// Tickets is the ticketing workload on the engine's shards, and its API
// (docs/API.md). Seat maps and open reservations live in the shards that own
// their areas (shard); the events, the reservation index readers use, and
// the seats each user holds per event are shared.
type Tickets struct {
	eng    *engine.Engine
	port   *engine.Port
	ledger Ledger
	db     ticketstore.Store
	log    *slog.Logger
	shards []*shard

	mu     sync.RWMutex
	events map[string]*eventState
	// creating serialises event creation, which writes storage itself.
	creating sync.Mutex
	index    *resvIndex
	areas    areaTable
	users    userSeats
	// outcomes counts reservations decided, by state and failure reason.
	outcomes *prometheus.CounterVec
}

func (t *Tickets) outcome(r *tickets.Reservation) {
	t.outcomes.WithLabelValues(string(r.State), string(r.FailedReason)).Inc()
}

// eventState is an event and its areas.
type eventState struct {
	spec  tickets.EventSpec
	areas map[string]*areaState
	list  []*areaState // in the spec's order
}

// areaState is one area of an event. seats belongs to the goroutine of
// shard; available and soldOutAt are published after each commit, for the
// edge to turn requests away from sold-out areas without queueing them.
type areaState struct {
	event     *eventState
	spec      tickets.AreaSpec
	shard     int
	seats     *tickets.Area
	index     uint32 // in ticketing.areas
	available atomic.Int64
	soldOutAt atomic.Int64 // unix nanoseconds of the commit that sold the last seat
}

func (t *Tickets) event(name string) (*eventState, bool) {
	t.mu.RLock()
	ev, ok := t.events[name]
	t.mu.RUnlock()
	return ev, ok
}

func (t *Tickets) area(event, area string) (*areaState, bool) {
	ev, ok := t.event(event)
	if !ok {
		return nil, false
	}
	a, ok := ev.areas[area]
	return a, ok
}

// addEvent builds the state of spec; its areas go to the shards that own
// them.
func (t *Tickets) addEvent(spec tickets.EventSpec) *eventState {
	ev := &eventState{spec: spec, areas: make(map[string]*areaState, len(spec.Areas))}
	for _, as := range spec.Areas {
		a := &areaState{event: ev, spec: as, shard: t.eng.ShardOf(areaKey(spec.EventName, as.AreaID)), seats: tickets.NewArea(as.RowCount, as.ColCount)}
		a.available.Store(int64(as.RowCount * as.ColCount))
		t.areas.add(a)
		ev.areas[as.AreaID] = a
		ev.list = append(ev.list, a)
	}
	t.mu.Lock()
	t.events[spec.EventName] = ev
	t.mu.Unlock()
	return ev
}

// areaKey is the sharding key of an area: all of an area's seats belong to
// one shard, which serialises their allocation.
func areaKey(event, area string) string { return event + "\x00" + area }

// publishArea refreshes a's edge counters after a commit, from the shard
// that owns it.
func publishArea(a *areaState, now time.Time) {
	free := int64(a.seats.Free())
	a.available.Store(free)
	if free == 0 {
		a.soldOutAt.CompareAndSwap(0, now.UnixNano())
	} else {
		a.soldOutAt.Store(0)
	}
}

// userSeats counts the seats each user holds per event, for events with a
// per-user limit. A request claims its seats here before it is queued and
// gives them back if it fails, so concurrent requests of one user cannot
// together pass the limit.
type userSeats struct {
	mu sync.Mutex
	m  map[userKey]int
}

type userKey struct{ event, user string }

// claim adds n seats to the user's count unless that passes limit.
func (u *userSeats) claim(event, user string, n, limit int) bool {
	k := userKey{event, user}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m[k]+n > limit {
		return false
	}
	u.m[k] += n
	return true
}

// add counts n seats held, on restart.
func (u *userSeats) add(event, user string, n int) {
	u.mu.Lock()
	u.m[userKey{event, user}] += n
	u.mu.Unlock()
}

// give returns n seats of the user's count.
func (u *userSeats) give(event, user string, n int) {
	k := userKey{event, user}
	u.mu.Lock()
	if u.m[k] -= n; u.m[k] <= 0 {
		delete(u.m, k)
	}
	u.mu.Unlock()
}
