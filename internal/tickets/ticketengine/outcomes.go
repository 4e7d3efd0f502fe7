package ticketengine

import (
	"math"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/tickets"
)

// A settled reservation — failed, cancelled or expired — never changes
// again. It is kept in memory only while its client may still ask for it;
// then a cancelled or expired one is read from storage, and a failed one,
// which changed nothing and is never stored, is forgotten (a read answers
// reservation_not_found). Each index stripe keeps them in two generations:
// new ones go to the current one; the current one becomes the previous
// one, and the previous one is dropped whole, once the current one is
// OutcomeRetention old or holds its share of OutcomeMemoryBytes. So an
// outcome is kept at least OutcomeRetention unless outcomes arrive faster
// than the budget holds, and the memory they take stays under the budget
// however many fail.

// Defaults of the retention of settled reservations.
const (
	// DefaultOutcomeRetention is the long-poll's longest wait (a minute)
	// plus as much again for a client's retries.
	DefaultOutcomeRetention = 2 * time.Minute
	// DefaultOutcomeMemoryBytes holds about 1.8 million sold-out failures.
	DefaultOutcomeMemoryBytes = 128 << 20
)

// Estimated bytes a settled reservation costs, map slot included: a sold-out record
// is 16 bytes of key and 24 of value in a map of 7/8 load; any other keeps
// the whole reservation.
const (
	soldOutCost     = 48
	reservationCost = int64(unsafe.Sizeof(tickets.Reservation{})) + 48
)

// settledGen is one generation of a stripe's settled reservations. Its maps
// are made on first use, so idle stripes cost nothing.
type settledGen struct {
	// soldOut holds the commonest failure, a RANDOM request that found no
	// block of its size, in a map whose keys and values hold no pointers,
	// with the user ids in users: the GC never scans either, however many
	// hundreds of thousands of failures a flash sale leaves (840,000 of
	// 1,000,000 requests in seed 002's test). Kept as whole reservations
	// they cost ~480 bytes each and a third of the server's CPU in GC.
	soldOut map[uuid.UUID]soldOut
	users   []byte
	// other holds every other settled reservation whole.
	other map[uuid.UUID]*tickets.Reservation
	// bytes estimates the memory the generation holds.
	bytes int64
	// started is when the generation became the current one.
	started time.Time
}

func (g *settledGen) len() int { return len(g.soldOut) + len(g.other) }

// soldOut is a RANDOM reservation of n seats in an area that failed
// NOT_AVAILABLE, pointer-free, as a single process's index and a
// cluster's shard keep the commonest failure: the user id is
// users[user:user+userLen] of its keeper's users, area is the area's
// number with its keeper, and the rest of the reservation is rebuilt from
// these (reservation).
type soldOut struct {
	created int64
	user    uint32
	area    uint32
	n       uint8
	userLen uint8
}

// compactable reports whether r, a reservation of area area of event,
// can be kept as a soldOut record: rebuilt, it answers as r does (its
// UpdatedAt, which no answer shows, becomes its CreatedAt; no seats, nil
// or empty, become nil).
func compactable(r *tickets.Reservation, event, area string) bool {
	return r.State == tickets.Failed && r.Kind == tickets.Random && len(r.Seats) == 0 &&
		r.FailedReason == tickets.ReasonNotAvailable && r.NumOfSeats > 0 && r.NumOfSeats <= math.MaxUint8 &&
		len(r.UserID) <= math.MaxUint8 && r.EventID == event && r.AreaID == area &&
		r.Detail == tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
}

// newSoldOut records r, compactable in the area numbered area, appending
// its user id to users.
func newSoldOut(r *tickets.Reservation, area uint32, users *[]byte) soldOut {
	f := soldOut{created: r.CreatedAt.UnixNano(), user: uint32(len(*users)), area: area, n: uint8(r.NumOfSeats), userLen: uint8(len(r.UserID))}
	*users = append(*users, r.UserID...)
	return f
}

// reservation rebuilds sold-out reservation id of area area of event.
func (f soldOut) reservation(id string, users []byte, event, area string) *tickets.Reservation {
	r := &tickets.Reservation{
		ID: id, UserID: string(users[f.user : f.user+uint32(f.userLen)]),
		EventID: event, AreaID: area, NumOfSeats: int(f.n), Kind: tickets.Random,
		State: tickets.Failed, FailedReason: tickets.ReasonNotAvailable, CreatedAt: time.Unix(0, f.created).UTC(),
	}
	r.UpdatedAt = r.CreatedAt
	r.Detail = tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
	return r
}

// settled reports whether r never changes again and may leave memory.
// Paid ones do not change either, but hold seats: the Desk keeps them.
func settled(r *tickets.Reservation) bool {
	return r.Settled() && !r.HoldsSeats()
}

// addSettled keeps r, a settled reservation of area a (nil if unknown), in
// the current generation, and reports whether it is the only one kept;
// the stripe's lock must be held.
func (s *resvStripe) addSettled(id uuid.UUID, r *tickets.Reservation, a *areaState, now time.Time, x *resvIndex) bool {
	compact := a != nil && compactable(r, a.event.spec.EventName, a.spec.AreaID)
	cost := soldOutCost + int64(len(r.UserID))
	if !compact {
		cost = reservationCost + int64(len(r.ID)+len(r.UserID)+len(r.EventID)+len(r.AreaID)+len(r.Detail)) +
			int64(len(r.Seats))*int64(unsafe.Sizeof(tickets.Seat{}))
	}
	s.age(now, cost, x)
	first := x.kept.Add(1) == 1
	g := &s.settled[0]
	g.bytes += cost
	if !compact {
		if g.other == nil {
			g.other = make(map[uuid.UUID]*tickets.Reservation)
		}
		g.other[id] = r
		return first
	}
	if g.soldOut == nil {
		g.soldOut = make(map[uuid.UUID]soldOut)
	}
	g.soldOut[id] = newSoldOut(r, a.index, &g.users)
	return first
}

// findSettled returns the settled reservation id, if still kept; the
// stripe's lock must be held.
func (s *resvStripe) findSettled(id uuid.UUID, areas *areaTable) (*tickets.Reservation, bool) {
	for i := range s.settled {
		g := &s.settled[i]
		if f, ok := g.soldOut[id]; ok {
			return g.expand(id, f, areas), true
		}
		if r, ok := g.other[id]; ok {
			return r, true
		}
	}
	return nil, false
}

// expand rebuilds a sold-out reservation.
func (g *settledGen) expand(id uuid.UUID, f soldOut, areas *areaTable) *tickets.Reservation {
	a := areas.at(f.area)
	return f.reservation(id.String(), g.users, a.event.spec.EventName, a.spec.AreaID)
}

// age starts a new generation, dropping the previous one, once the
// current one is old or has no room for adding more bytes; the stripe's
// lock must be held.
func (s *resvStripe) age(now time.Time, adding int64, x *resvIndex) {
	cur := &s.settled[0]
	if cur.started.IsZero() {
		cur.started = now
	}
	if now.Sub(cur.started) < x.retention && (cur.bytes+adding <= x.genBytes || cur.bytes == 0) {
		return
	}
	dropped := int64(s.settled[1].len())
	x.forgotten.Add(dropped)
	x.kept.Add(-dropped)
	s.settled[1] = *cur
	s.settled[0] = settledGen{started: now}
}

// expire ages every stripe, so that settled reservations leave memory on
// time when no new ones arrive.
func (x *resvIndex) expire(now time.Time) {
	for i := range x.stripes {
		s := &x.stripes[i]
		s.mu.Lock()
		s.age(now, 0, x)
		s.mu.Unlock()
	}
	x.expired.Store(now.UnixNano())
}

// nextExpiry is when expire should next run, every quarter retention
// while settled reservations are kept; zero when none are.
func (x *resvIndex) nextExpiry() time.Time {
	if x.kept.Load() == 0 {
		return time.Time{}
	}
	return time.Unix(0, x.expired.Load()).Add(x.retention / 4)
}

// retained counts the settled reservations kept and the bytes they are
// estimated to take.
func (x *resvIndex) retained() (n int, bytes int64) {
	for i := range x.stripes {
		s := &x.stripes[i]
		s.mu.Lock()
		for j := range s.settled {
			n += s.settled[j].len()
			bytes += s.settled[j].bytes
		}
		s.mu.Unlock()
	}
	return n, bytes
}

var (
	retainedDesc = prometheus.NewDesc("surge_reservation_outcomes_retained",
		"Settled reservations (failed, cancelled, expired) kept in memory for readers.", nil, nil)
	retainedBytesDesc = prometheus.NewDesc("surge_reservation_outcomes_retained_bytes",
		"Estimated memory the settled reservations kept take; bounded by --outcome-memory-mb.", nil, nil)
	forgottenDesc = prometheus.NewDesc("surge_reservation_outcomes_forgotten_total",
		"Settled reservations dropped from memory: a failed one is then unknown (404), a cancelled or expired one read from storage.", nil, nil)
)

// outcomesCollector reads the retained outcomes at scrape time.
type outcomesCollector struct{ x *resvIndex }

func (c outcomesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- retainedDesc
	ch <- retainedBytesDesc
	ch <- forgottenDesc
}

func (c outcomesCollector) Collect(ch chan<- prometheus.Metric) {
	n, bytes := c.x.retained()
	ch <- prometheus.MustNewConstMetric(retainedDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(retainedBytesDesc, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(forgottenDesc, prometheus.CounterValue, float64(c.x.forgotten.Load()))
}

// storedReservation reads a settled reservation that left memory from
// storage; a read that fails is logged and answered as not found.
func (t *Tickets) storedReservation(id uuid.UUID) (*tickets.Reservation, bool) {
	r, ok, err := t.db.Reservation(id.String())
	if err != nil {
		t.log.Error("reading a stored reservation", "id", id, "err", err)
	}
	return r, ok
}
