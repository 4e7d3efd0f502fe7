package spike

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/bench/report"
)

// testPlan is one event "e" of two 2×4 areas, "0" and "1".
func testPlan() *spikePlan {
	cfg := DefaultSpikeConfig()
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 1, 2, 2, 4
	p := newSpikePlan(cfg, "e")
	return p
}

func seats(pairs ...int) []spikeSeat {
	out := make([]spikeSeat, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, spikeSeat{pairs[i], pairs[i+1]})
	}
	return out
}

func TestSeatBookFindsDoubleBookingInReplies(t *testing.T) {
	b := newSeatBook(testPlan(), 2, 4)
	b.claim(0, seats(0, 1, 0, 2), "r1")
	b.claim(1, seats(0, 1, 0, 2), "r2") // same seats, other area: fine
	b.claim(0, seats(1, 0), "r3")
	b.claim(0, seats(0, 2, 0, 3), "r4") // (0, 2) is r1's
	b.claim(0, seats(9, 9, -1, 0), "r5")
	n, examples := b.doubleBookings()
	if n != 1 || len(examples) != 1 {
		t.Fatalf("%d double bookings %v; want 1", n, examples)
	}
	want := report.DoubleBooking{Event: "e-0", Area: "0", Row: 0, Col: 2, Reservations: [2]string{"r1", "r4"}}
	if examples[0] != want {
		t.Fatalf("example %+v; want %+v", examples[0], want)
	}
	if got := examples[0].String(); got != "e-0/0 seat (0, 2) held by r1 and r4" {
		t.Fatalf("String() = %q", got)
	}
	if b.sold(0) != 4 || b.sold(1) != 2 {
		t.Fatalf("sold %d and %d; want 4 and 2", b.sold(0), b.sold(1))
	}
}

// TestSeatBookConcurrentClaims has many workers claim every seat of an
// area once, and one seat a second time: exactly one double booking.
func TestSeatBookConcurrentClaims(t *testing.T) {
	cfg := DefaultSpikeConfig()
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 1, 1, 40, 50
	b := newSeatBook(newSpikePlan(cfg, "e"), 40, 50)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := w; r < 40; r += 8 {
				for c := range 50 {
					b.claim(0, seats(r, c), fmt.Sprintf("r%d-%d", r, c))
				}
			}
			if w == 0 {
				b.claim(0, seats(39, 49), "again")
			}
		}()
	}
	wg.Wait()
	n, examples := b.doubleBookings()
	if n != 1 || b.sold(0) != 2000 {
		t.Fatalf("%d double bookings, %d sold; want 1 and 2000", n, b.sold(0))
	}
	if examples[0].Reservations != [2]string{"r39-49", "again"} && examples[0].Reservations != [2]string{"again", "r39-49"} {
		t.Fatalf("example %v", examples[0])
	}
}

// serverArea builds the server's view of a 2×4 area from its taken seats.
func serverArea(taken ...any) *areaJSON {
	got := &areaJSON{RowCount: 2, ColCount: 4, SeatMap: []string{"....", "...."}, Available: 8}
	for i := 0; i < len(taken); i += 3 {
		r, c, id := taken[i].(int), taken[i+1].(int), taken[i+2].(string)
		got.Taken = append(got.Taken, struct {
			Row           int    `json:"row"`
			Col           int    `json:"col"`
			ReservationID string `json:"reservationId"`
			State         string `json:"state"`
		}{r, c, id, "RESERVED"})
		if r >= 0 && r < 2 && c >= 0 && c < 4 && got.SeatMap[r][c] == '.' {
			got.SeatMap[r] = got.SeatMap[r][:c] + "x" + got.SeatMap[r][c+1:]
			got.Available--
		}
	}
	return got
}

func TestCompareArea(t *testing.T) {
	tests := []struct {
		name   string
		server *areaJSON
		change func(*areaJSON)
		want   report.SeatMapCheck // Examples not compared beyond being present
	}{
		{"agrees", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 3}},
		{"a sold seat is free on the server", serverArea(0, 1, "r1", 0, 2, "r1"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 2, Missing: 1}},
		{"a sold seat is held by another reservation", serverArea(0, 1, "r1", 0, 2, "r9", 1, 3, "r2"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 3, DoubleBooked: 1}},
		{"the server lists a seat twice", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2", 1, 3, "r7"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 4, DoubleBooked: 1}},
		{"a seat taken without a reply", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2", 1, 0, "r8"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 4, Unreported: 1}},
		{"paid seats count as held", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.Taken[2].State = "PAID" }, report.SeatMapCheck{Areas: 1, Taken: 3}},
		{"an expired reservation listed as taken", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.Taken[2].State = "EXPIRED" }, report.SeatMapCheck{Areas: 1, Taken: 3, Missing: 1, Inconsistent: 1}},
		{"a taken seat out of range", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2", 2, 0, "r8"), nil,
			report.SeatMapCheck{Areas: 1, Taken: 4, Inconsistent: 1}},
		{"the seat map disagrees", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.SeatMap[0] = "x..." }, report.SeatMapCheck{Areas: 1, Taken: 3, Inconsistent: 1}},
		{"the seat map is short", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.SeatMap = a.SeatMap[:1] }, report.SeatMapCheck{Areas: 1, Taken: 3, Inconsistent: 1}},
		{"the available count disagrees", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.Available = 8 }, report.SeatMapCheck{Areas: 1, Taken: 3, Inconsistent: 1}},
		{"another size", serverArea(0, 1, "r1", 0, 2, "r1", 1, 3, "r2"),
			func(a *areaJSON) { a.ColCount = 5 }, report.SeatMapCheck{Areas: 1, Inconsistent: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newSeatBook(testPlan(), 2, 4)
			b.claim(0, seats(0, 1, 0, 2), "r1")
			b.claim(0, seats(1, 3), "r2")
			if tt.change != nil {
				tt.change(tt.server)
			}
			var got report.SeatMapCheck
			b.compareArea(0, tt.server, &got)
			problems := tt.want.DoubleBooked + tt.want.Missing + tt.want.Unreported + tt.want.Inconsistent
			if (len(got.Examples) > 0) != (problems > 0) {
				t.Fatalf("examples %q for %d problems", got.Examples, problems)
			}
			got.Examples = nil
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("check %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestCompareAreaExamplesNameTheSeat(t *testing.T) {
	b := newSeatBook(testPlan(), 2, 4)
	b.claim(1, seats(1, 2), "r1")
	var got report.SeatMapCheck
	b.compareArea(1, serverArea(1, 2, "r9"), &got)
	if len(got.Examples) != 1 || !strings.Contains(got.Examples[0], "e-0/1 seat (1, 2): the reply gave it to r1, the server to r9") {
		t.Fatalf("examples %q", got.Examples)
	}
}
