package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
)

// maxSeatExamples bounds the examples a report keeps of each kind of
// seat problem.
const maxSeatExamples = 10

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
	examples     []DoubleBooking
	exampleAreas []int
}

// bookArea is one area's sold seats (bit row*cols+col) and, per seat, the
// reservation the first claim came from.
type bookArea struct {
	sold  []atomic.Uint64
	owner []string
}

// DoubleBooking is one seat sold twice.
type DoubleBooking struct {
	Event string `json:"event"`
	Area  string `json:"area"`
	Row   int    `json:"row"`
	Col   int    `json:"col"`
	// Reservations are the two reservations that both hold the seat.
	Reservations [2]string `json:"reservations"`
}

func (d DoubleBooking) String() string {
	return fmt.Sprintf("%s/%s seat (%d, %d) held by %s and %s", d.Event, d.Area, d.Row, d.Col, d.Reservations[0], d.Reservations[1])
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
		if len(b.examples) < maxSeatExamples {
			area := b.plan.areas[a]
			// The first holder is filled in by doubleBookings, after the
			// run: its claim may still be writing owner[i] now.
			b.examples = append(b.examples, DoubleBooking{Event: area.event, Area: area.id, Row: s.Row, Col: s.Col,
				Reservations: [2]string{"", id}})
			b.exampleAreas = append(b.exampleAreas, a)
		}
		b.mu.Unlock()
	}
}

// doubleBookings returns the number of seats claimed twice and examples.
// Call it once no claim is running.
func (b *seatBook) doubleBookings() (int64, []DoubleBooking) {
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

// SeatMapCheck compares the replies with the seat maps the server shows
// after the run (GET /v1/event/{id}/area/{areaId}).
type SeatMapCheck struct {
	// Areas counts the areas compared; Errors those that could not be read.
	Areas  int   `json:"areas"`
	Errors int64 `json:"errors"`
	// Taken counts the seats the server lists as taken.
	Taken int64 `json:"taken"`
	// DoubleBooked counts seats the server lists twice, or holds for a
	// reservation other than the one whose RESERVED reply had them.
	DoubleBooked int64 `json:"double_booked"`
	// Missing counts seats of RESERVED replies that the server shows free.
	Missing int64 `json:"missing"`
	// Unreported counts seats taken on the server with no RESERVED reply:
	// expected only for requests that failed on the way back.
	Unreported int64 `json:"unreported"`
	// Inconsistent counts areas whose seat map, available count and taken
	// list disagree with each other or with the area's size.
	Inconsistent int64    `json:"inconsistent"`
	Examples     []string `json:"examples,omitempty"`
}

func (c *SeatMapCheck) example(format string, args ...any) {
	if len(c.Examples) < maxSeatExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
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
func (b *seatBook) checkServer(ctx context.Context, c *HTTPClient, plan *spikePlan) SeatMapCheck {
	var check SeatMapCheck
	for a, area := range plan.areas {
		path := "/v1/event/" + area.event + "/area/" + area.id
		status, reply, err := c.Do(ctx, http.MethodGet, path, nil)
		var got areaJSON
		switch {
		case err != nil:
			check.Errors++
			check.example("GET %s: %v", path, err)
			continue
		case status != http.StatusOK:
			check.Errors++
			check.example("GET %s: %s: %s", path, StatusKey(status, reply), ProblemDetail(reply))
			continue
		case json.Unmarshal(reply, &got) != nil:
			check.Errors++
			check.example("GET %s: not an area: %s", path, ProblemDetail(reply))
			continue
		}
		b.compareArea(a, &got, &check)
	}
	return check
}

// compareArea compares the server's seat map of area a with the book.
func (b *seatBook) compareArea(a int, got *areaJSON, check *SeatMapCheck) {
	check.Areas++
	area := b.plan.areas[a]
	name := area.event + "/" + area.id
	if got.RowCount != b.rows || got.ColCount != b.cols {
		check.Inconsistent++
		check.example("%s is %d×%d, created %d×%d", name, got.RowCount, got.ColCount, b.rows, b.cols)
		return
	}
	holder := make([]string, b.rows*b.cols)
	held := make([]bool, b.rows*b.cols)
	consistent := true
	for _, t := range got.Taken {
		check.Taken++
		if t.Row < 0 || t.Row >= b.rows || t.Col < 0 || t.Col >= b.cols || (t.State != "RESERVED" && t.State != "PAID") {
			consistent = false
			check.example("%s lists seat (%d, %d) as taken by %s in state %q", name, t.Row, t.Col, t.ReservationID, t.State)
			continue
		}
		i := t.Row*b.cols + t.Col
		if held[i] {
			check.DoubleBooked++
			check.example("%s lists seat (%d, %d) twice: %s and %s", name, t.Row, t.Col, holder[i], t.ReservationID)
			continue
		}
		held[i], holder[i] = true, t.ReservationID
	}
	for i := range holder {
		sold, owner := b.isSold(a, i), b.areas[a].owner[i]
		switch {
		case sold && !held[i]:
			check.Missing++
			check.example("%s seat (%d, %d) of reservation %s is free on the server", name, i/b.cols, i%b.cols, owner)
		case sold && holder[i] != owner:
			check.DoubleBooked++
			check.example("%s seat (%d, %d): the reply gave it to %s, the server to %s", name, i/b.cols, i%b.cols, owner, holder[i])
		case !sold && held[i]:
			check.Unreported++
			check.example("%s seat (%d, %d) is taken by %s, which no RESERVED reply had", name, i/b.cols, i%b.cols, holder[i])
		}
	}
	if !consistent || !seatMapAgrees(got, held, b.cols) {
		check.Inconsistent++
		check.example("%s: the seat map or available count (%d) disagrees with the %d seats listed as taken",
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
