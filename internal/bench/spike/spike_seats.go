package spike

import (
	"context"
	"encoding/json"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
)

// seatBook is every seat the replies sold, per area: the check against
// double booking. Workers claim seats concurrently; a seat claimed twice is
// a seat in two RESERVED replies. It costs a bit and a string per seat,
// whatever the number of requests.
type seatBook struct {
	plan       *spikePlan
	rows, cols int
	areas      []bookArea
	conflicts  atomic.Int64
	mu         sync.Mutex
	// examples are the first few conflicts, exampleAreas their areas.
	examples     []report.DoubleBooking
	exampleAreas []int
}

// bookArea is one area's sold seats (bit row*cols+col) and, per seat, the
// reservation the first claim came from.
type bookArea struct {
	sold  []atomic.Uint64
	owner []string
}

func newSeatBook(plan *spikePlan, rows, cols int) *seatBook {
	b := &seatBook{plan: plan, rows: rows, cols: cols, areas: make([]bookArea, len(plan.areas))}
	for i := range b.areas {
		b.areas[i] = bookArea{sold: make([]atomic.Uint64, (rows*cols+63)/64), owner: make([]string, rows*cols)}
	}
	return b
}

// claim records that reservation id holds seats of area a. Seats outside
// the area are skipped (the caller reports them).
func (b *seatBook) claim(a int, seats []spikeSeat, id string) {
	ar := &b.areas[a]
	for _, s := range seats {
		if s.Row < 0 || s.Row >= b.rows || s.Col < 0 || s.Col >= b.cols {
			continue
		}
		i := s.Row*b.cols + s.Col
		bit := uint64(1) << (i % 64)
		if ar.sold[i/64].Or(bit)&bit == 0 {
			// The claim that set the bit owns the seat: no other writes owner[i].
			ar.owner[i] = id
			continue
		}
		b.conflicts.Add(1)
		b.mu.Lock()
		if len(b.examples) < report.MaxSeatExamples {
			area := b.plan.areas[a]
			// The first holder is filled in by doubleBookings, after the
			// run: its claim may still be writing owner[i] now.
			b.examples = append(b.examples, report.DoubleBooking{Event: area.event, Area: area.id, Row: s.Row, Col: s.Col,
				Reservations: [2]string{"", id}})
			b.exampleAreas = append(b.exampleAreas, a)
		}
		b.mu.Unlock()
	}
}

// doubleBookings returns the number of seats claimed twice and examples.
// Call it once no claim is running.
func (b *seatBook) doubleBookings() (int64, []report.DoubleBooking) {
	for i, d := range b.examples {
		b.examples[i].Reservations[0] = b.areas[b.exampleAreas[i]].owner[d.Row*b.cols+d.Col]
	}
	return b.conflicts.Load(), b.examples
}

// sold returns the number of seats of area a the replies sold.
func (b *seatBook) sold(a int) int64 {
	var n int
	for i := range b.areas[a].sold {
		n += bits.OnesCount64(b.areas[a].sold[i].Load())
	}
	return int64(n)
}

func (b *seatBook) isSold(a, i int) bool {
	return b.areas[a].sold[i/64].Load()&(1<<(i%64)) != 0
}

// areaJSON is the server's seat map of one area.
type areaJSON struct {
	RowCount  int      `json:"rowCount"`
	ColCount  int      `json:"colCount"`
	Available int      `json:"available"`
	SeatMap   []string `json:"seatMap"`
	Taken     []struct {
		Row           int    `json:"row"`
		Col           int    `json:"col"`
		ReservationID string `json:"reservationId"`
		State         string `json:"state"`
	} `json:"taken"`
}

// checkServer reads every area's seat map and compares it with the book.
func (b *seatBook) checkServer(ctx context.Context, c *httpc.HTTPClient, plan *spikePlan) report.SeatMapCheck {
	var check report.SeatMapCheck
	for a, area := range plan.areas {
		path := "/v1/event/" + area.event + "/area/" + area.id
		status, reply, err := c.Do(ctx, http.MethodGet, path, nil)
		var got areaJSON
		switch {
		case err != nil:
			check.Errors++
			check.Example("GET %s: %v", path, err)
			continue
		case status != http.StatusOK:
			check.Errors++
			check.Example("GET %s: %s: %s", path, httpc.StatusKey(status, reply), httpc.ProblemDetail(reply))
			continue
		case json.Unmarshal(reply, &got) != nil:
			check.Errors++
			check.Example("GET %s: not an area: %s", path, httpc.ProblemDetail(reply))
			continue
		}
		b.compareArea(a, &got, &check)
	}
	return check
}

// compareArea compares the server's seat map of area a with the book.
func (b *seatBook) compareArea(a int, got *areaJSON, check *report.SeatMapCheck) {
	check.Areas++
	area := b.plan.areas[a]
	name := area.event + "/" + area.id
	if got.RowCount != b.rows || got.ColCount != b.cols {
		check.Inconsistent++
		check.Example("%s is %d×%d, created %d×%d", name, got.RowCount, got.ColCount, b.rows, b.cols)
		return
	}
	holder := make([]string, b.rows*b.cols)
	held := make([]bool, b.rows*b.cols)
	consistent := true
	for _, t := range got.Taken {
		check.Taken++
		if t.Row < 0 || t.Row >= b.rows || t.Col < 0 || t.Col >= b.cols || (t.State != "RESERVED" && t.State != "PAID") {
			consistent = false
			check.Example("%s lists seat (%d, %d) as taken by %s in state %q", name, t.Row, t.Col, t.ReservationID, t.State)
			continue
		}
		i := t.Row*b.cols + t.Col
		if held[i] {
			check.DoubleBooked++
			check.Example("%s lists seat (%d, %d) twice: %s and %s", name, t.Row, t.Col, holder[i], t.ReservationID)
			continue
		}
		held[i], holder[i] = true, t.ReservationID
	}
	for i := range holder {
		sold, owner := b.isSold(a, i), b.areas[a].owner[i]
		switch {
		case sold && !held[i]:
			check.Missing++
			check.Example("%s seat (%d, %d) of reservation %s is free on the server", name, i/b.cols, i%b.cols, owner)
		case sold && holder[i] != owner:
			check.DoubleBooked++
			check.Example("%s seat (%d, %d): the reply gave it to %s, the server to %s", name, i/b.cols, i%b.cols, owner, holder[i])
		case !sold && held[i]:
			check.Unreported++
			check.Example("%s seat (%d, %d) is taken by %s, which no RESERVED reply had", name, i/b.cols, i%b.cols, holder[i])
		}
	}
	if !consistent || !seatMapAgrees(got, held, b.cols) {
		check.Inconsistent++
		check.Example("%s: the seat map or available count (%d) disagrees with the %d seats listed as taken",
			name, got.Available, len(got.Taken))
	}
}

// seatMapAgrees reports whether the seat map marks exactly the held seats
// (any character but '.' marks a seat taken) and the available count is
// the rest.
func seatMapAgrees(got *areaJSON, held []bool, cols int) bool {
	if len(got.SeatMap) != got.RowCount {
		return false
	}
	n := 0
	for r, line := range got.SeatMap {
		if len(line) != cols {
			return false
		}
		for c := range cols {
			taken := line[c] != '.'
			if taken != held[r*cols+c] {
				return false
			}
			if taken {
				n++
			}
		}
	}
	return got.Available == len(held)-n
}
