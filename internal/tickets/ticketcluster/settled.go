package ticketcluster

import (
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/tickets"
)

// Remembered is how many settled reservations a node keeps to answer
// their reads without a round: enough for every client's read right
// after its own reservation, and then some.
const Remembered = 1 << 14

// settled remembers the reservations a node saw settled in a committed
// answer (a reservation's decision, a read, a payment or a cancellation:
// each reaches the node only once its round is committed). A settled
// reservation never changes again (tickets.Reservation.Settled), so a
// read of one is answered from here exactly as its partition would
// answer it, with no command. The least recently read are forgotten
// past the bound; a read of a forgotten or unsettled one goes through a
// round.
type settled struct {
	kept *lru.Cache[string, *tickets.Reservation]
	// recalled and asked count the reads answered from memory and those
	// that went through a round.
	recalled, asked atomic.Uint64
}

func newSettled(n int) *settled {
	kept, err := lru.New[string, *tickets.Reservation](n)
	if err != nil {
		panic("ticketcluster: " + err.Error()) // n is a positive constant
	}
	return &settled{kept: kept}
}

// learn keeps r, a reservation from a committed answer, if it is settled.
func (s *settled) learn(r *tickets.Reservation) {
	if r != nil && r.Settled() {
		s.kept.Add(r.ID, r)
	}
}

// recall returns reservation id if it is kept, and counts the read.
func (s *settled) recall(id string) (tickets.Reservation, bool) {
	r, ok := s.kept.Get(id)
	if !ok {
		s.asked.Add(1)
		return tickets.Reservation{}, false
	}
	s.recalled.Add(1)
	return *r, true
}

// Reads counts the reservation reads this node answered from memory and
// those it sent through a round.
func (t *Tickets) Reads() (fromMemory, throughRounds uint64) {
	return t.settled.recalled.Load(), t.settled.asked.Load()
}

// Register registers the metrics of the node's reservation reads with reg.
func (t *Tickets) Register(reg prometheus.Registerer) {
	const reads, help = "surge_cluster_reservation_reads_total", "Reservation reads by how they were answered: from the settled reservations a node remembers, or through a round."
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: reads, Help: help, ConstLabels: prometheus.Labels{"answer": "memory"}},
			func() float64 { return float64(t.settled.recalled.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: reads, Help: help, ConstLabels: prometheus.Labels{"answer": "round"}},
			func() float64 { return float64(t.settled.asked.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "surge_cluster_reservations_remembered",
			Help: "Settled reservations a node remembers to answer their reads without a round."},
			func() float64 { return float64(t.settled.kept.Len()) }),
	)
}
