package ticketcluster

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/surge-dev/surge/internal/tickets"
)

func reservationIn(id string, state tickets.State) *tickets.Reservation {
	return &tickets.Reservation{ID: id, UserID: "u", EventID: "e", AreaID: "A", NumOfSeats: 1, Kind: tickets.Random,
		State: state, FailedReason: tickets.ReasonNotAvailable, Detail: "none", CreatedAt: time.Unix(1, 0)}
}

// Only settled reservations are kept; a read of any other goes through a
// round, and every read is counted by how it was answered.
func TestSettledKeepsOnlySettledReservations(t *testing.T) {
	s := newSettled(8)
	for _, st := range []tickets.State{tickets.Processing, tickets.Reserved, tickets.Failed, tickets.Paid, tickets.Cancelled, tickets.Expired} {
		s.learn(reservationIn(string(st), st))
	}
	s.learn(nil) // an answer without a reservation: not found
	for _, st := range []tickets.State{tickets.Processing, tickets.Reserved, tickets.Failed, tickets.Paid, tickets.Cancelled, tickets.Expired} {
		r, ok := s.recall(string(st))
		if want := st != tickets.Processing && st != tickets.Reserved; ok != want {
			t.Fatalf("%s: recalled %v; want %v", st, ok, want)
		}
		if ok && !reflect.DeepEqual(r, *reservationIn(string(st), st)) {
			t.Fatalf("%s: recalled %+v", st, r)
		}
	}
	if s.recalled.Load() != 4 || s.asked.Load() != 2 {
		t.Fatalf("counted %d from memory, %d through rounds; want 4 and 2", s.recalled.Load(), s.asked.Load())
	}
}

// The memory holds a fixed number of reservations: past it, the least
// recently read is forgotten, and its next read goes through a round.
func TestSettledIsBounded(t *testing.T) {
	s := newSettled(3)
	for i := range 3 {
		s.learn(reservationIn(fmt.Sprint(i), tickets.Failed))
	}
	if _, ok := s.recall("0"); !ok { // 0 read last, 1 least recently
		t.Fatal("0 forgotten before the bound")
	}
	s.learn(reservationIn("3", tickets.Failed))
	if _, ok := s.recall("1"); ok {
		t.Fatal("1 kept past the bound")
	}
	for _, id := range []string{"0", "2", "3"} {
		if _, ok := s.recall(id); !ok {
			t.Fatalf("%s forgotten", id)
		}
	}
	if n := s.kept.Len(); n != 3 {
		t.Fatalf("%d kept; want 3", n)
	}
}

// The counts reach Prometheus.
func TestSettledMetrics(t *testing.T) {
	tk := &Tickets{settled: newSettled(Remembered)}
	reg := prometheus.NewRegistry()
	tk.Register(reg)
	tk.settled.learn(reservationIn("f", tickets.Failed))
	tk.settled.recall("f")
	tk.settled.recall("f")
	tk.settled.recall("other")
	want := `
# HELP surge_cluster_reservation_reads_total Reservation reads by how they were answered: from the settled reservations a node remembers, or through a round.
# TYPE surge_cluster_reservation_reads_total counter
surge_cluster_reservation_reads_total{answer="memory"} 2
surge_cluster_reservation_reads_total{answer="round"} 1
# HELP surge_cluster_reservations_remembered Settled reservations a node remembers to answer their reads without a round.
# TYPE surge_cluster_reservations_remembered gauge
surge_cluster_reservations_remembered 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if m, r := tk.Reads(); m != 2 || r != 1 {
		t.Fatalf("Reads() = %d, %d; want 2, 1", m, r)
	}
}
