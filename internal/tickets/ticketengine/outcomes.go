package ticketengine

import (
	"math"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/tickets"
)

// Failed reservations change nothing and are never stored: they are kept
// in memory only while their client may still ask for them, and then
// forgotten (a read answers reservation_not_found). Each index stripe keeps
// them in two generations: new failures go to the current one; the current
// one becomes the previous one, and the previous one is dropped whole, once
// the current one is FailureRetention old or holds its share of
// FailureMemoryBytes. So a failure is kept at least FailureRetention unless
// failures arrive faster than the budget holds, and the memory they take
// stays under the budget however many fail.

// Defaults of the retention of failed reservations.
const (
	// DefaultFailureRetention is the long-poll's longest wait (a minute)
	// plus as much again for a client's retries.
	DefaultFailureRetention = 2 * time.Minute
	// DefaultFailureMemoryBytes holds about 1.8 million sold-out failures.
	DefaultFailureMemoryBytes = 128 << 20
)

// Estimated bytes a failure costs, map slot included: a sold-out record
// is 16 bytes of key and 24 of value in a map of 7/8 load; any other keeps
// the whole reservation.
const (
	soldOutCost     = 48
	reservationCost = int64(unsafe.Sizeof(tickets.Reservation{})) + 48
)

// failedGen is one generation of a stripe's failed reservations. Its maps
// are made on first use, so idle stripes cost nothing.
type failedGen struct {
	// soldOut holds the commonest failure, a RANDOM request that found no
	// block of its size, in a map whose keys and values hold no pointers,
	// with the user ids in users: the GC never scans either, however many
	// hundreds of thousands of failures a flash sale leaves (840,000 of
	// 1,000,000 requests in seed 002's test). Kept as whole reservations
	// they cost ~480 bytes each and a third of the server's CPU in GC.
	soldOut map[uuid.UUID]soldOut
	users   []byte
	// other holds every other failure whole.
	other map[uuid.UUID]*tickets.Reservation
	// bytes estimates the memory the generation holds.
	bytes int64
	// started is when the generation became the current one.
	started time.Time
}

func (g *failedGen) len() int { return len(g.soldOut) + len(g.other) }

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

// addFailed keeps r, a failed reservation of area a (nil if unknown), in
// the current generation, and reports whether it is the only one kept;
// the stripe's lock must be held.
func (s *resvStripe) addFailed(id uuid.UUID, r *tickets.Reservation, a *areaState, now time.Time, x *resvIndex) bool {
	compact := compactable(r, a)
	cost := soldOutCost + int64(len(r.UserID))
	if !compact {
		cost = reservationCost + int64(len(r.ID)+len(r.UserID)+len(r.EventID)+len(r.AreaID)+len(r.Detail)) +
			int64(len(r.Seats))*int64(unsafe.Sizeof(tickets.Seat{}))
	}
	s.age(now, cost, x)
	first := x.kept.Add(1) == 1
	g := &s.failed[0]
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
	g.soldOut[id] = soldOut{created: r.CreatedAt.UnixNano(), user: uint32(len(g.users)), area: a.index,
		n: uint8(r.NumOfSeats), userLen: uint8(len(r.UserID))}
	g.users = append(g.users, r.UserID...)
	return first
}

// findFailed returns the failed reservation id, if still kept; the
// stripe's lock must be held.
func (s *resvStripe) findFailed(id uuid.UUID, areas *areaTable) (*tickets.Reservation, bool) {
	for i := range s.failed {
		g := &s.failed[i]
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
func (g *failedGen) expand(id uuid.UUID, f soldOut, areas *areaTable) *tickets.Reservation {
	a := areas.at(f.area)
	r := &tickets.Reservation{
		ID: id.String(), UserID: string(g.users[f.user : f.user+uint32(f.userLen)]),
		EventID: a.event.spec.EventName, AreaID: a.spec.AreaID, NumOfSeats: int(f.n), Kind: tickets.Random,
		State: tickets.Failed, FailedReason: tickets.ReasonNotAvailable, CreatedAt: time.Unix(0, f.created).UTC(),
	}
	r.UpdatedAt = r.CreatedAt
	r.Detail = tickets.NoBlockDetail(r.NumOfSeats, r.EventID, r.AreaID)
	return r
}

// age starts a new generation, dropping the previous one, once the
// current one is old or has no room for adding more bytes; the stripe's
// lock must be held.
func (s *resvStripe) age(now time.Time, adding int64, x *resvIndex) {
	cur := &s.failed[0]
	if cur.started.IsZero() {
		cur.started = now
	}
	if now.Sub(cur.started) < x.retention && (cur.bytes+adding <= x.genBytes || cur.bytes == 0) {
		return
	}
	dropped := int64(s.failed[1].len())
	x.forgotten.Add(dropped)
	x.kept.Add(-dropped)
	s.failed[1] = *cur
	s.failed[0] = failedGen{started: now}
}

// expireFailed ages every stripe, so that failures are forgotten on time
// when no new ones arrive.
func (x *resvIndex) expireFailed(now time.Time) {
	for i := range x.stripes {
		s := &x.stripes[i]
		s.mu.Lock()
		s.age(now, 0, x)
		s.mu.Unlock()
	}
	x.expired.Store(now.UnixNano())
}

// nextExpiry is when expireFailed should next run, every quarter
// retention while failures are kept; zero when none are.
func (x *resvIndex) nextExpiry() time.Time {
	if x.kept.Load() == 0 {
		return time.Time{}
	}
	return time.Unix(0, x.expired.Load()).Add(x.retention / 4)
}

// retained counts the failed reservations kept and the bytes they are
// estimated to take.
func (x *resvIndex) retained() (n int, bytes int64) {
	for i := range x.stripes {
		s := &x.stripes[i]
		s.mu.Lock()
		for j := range s.failed {
			n += s.failed[j].len()
			bytes += s.failed[j].bytes
		}
		s.mu.Unlock()
	}
	return n, bytes
}

var (
	retainedDesc = prometheus.NewDesc("surge_reservation_failures_retained",
		"Failed reservations kept in memory for readers.", nil, nil)
	retainedBytesDesc = prometheus.NewDesc("surge_reservation_failures_retained_bytes",
		"Estimated memory the failed reservations kept take; bounded by --failure-memory-mb.", nil, nil)
	forgottenDesc = prometheus.NewDesc("surge_reservation_failures_forgotten_total",
		"Failed reservations dropped from memory; reading one answers reservation_not_found.", nil, nil)
)

// outcomesCollector reads the retained failures at scrape time.
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
