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
		a := &areaState{event: ev, spec: as, shard: t.eng.ShardOf(tickets.AreaKey(spec.EventName, as.AreaID)), seats: tickets.NewArea(as.RowCount, as.ColCount)}
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

// userSeats are the seats each user claims per event, for events with a
// per-user limit (tickets.SeatClaims). A request claims its seats here
// before it is queued and gives them back once it holds none.
type userSeats struct {
	mu sync.Mutex
	m  map[userKey]*tickets.SeatClaims
}

type userKey struct{ event, user string }

// claim claims r's seats under ev's limit; a reason if it is refused.
func (u *userSeats) claim(ev *tickets.EventSpec, r *tickets.Reservation) (tickets.Reason, string) {
	k := userKey{ev.EventName, r.UserID}
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.m[k]
	if c == nil {
		c = &tickets.SeatClaims{}
		u.m[k] = c
	}
	reason, detail := c.Claim(ev, r)
	if c.Empty() {
		delete(u.m, k)
	}
	return reason, detail
}

// add counts the seats r holds, on restart.
func (u *userSeats) add(r *tickets.Reservation) {
	k := userKey{r.EventID, r.UserID}
	u.mu.Lock()
	if u.m[k] == nil {
		u.m[k] = &tickets.SeatClaims{}
	}
	u.m[k].Load(r)
	u.mu.Unlock()
}

// give gives r's claim back.
func (u *userSeats) give(r *tickets.Reservation) {
	k := userKey{r.EventID, r.UserID}
	u.mu.Lock()
	if c := u.m[k]; c != nil && c.Release(r.ID) && c.Empty() {
		delete(u.m, k)
	}
	u.mu.Unlock()
}
