package tickets

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// areaFrom builds an area from a seat map, 'x' for a taken seat, '.' free.
func areaFrom(t testing.TB, rows ...string) *Area {
	t.Helper()
	a := NewArea(len(rows), len(rows[0]))
	for r, row := range rows {
		for c, ch := range row {
			if ch == 'x' {
				a.Take([]Seat{{r, c}})
			}
		}
	}
	return a
}

// seatsOf parses "r,c r,c ..." into seats.
func seatsOf(s string) []Seat {
	var out []Seat
	for _, f := range strings.Fields(s) {
		var seat Seat
		if _, err := fmt.Sscanf(f, "%d,%d", &seat.Row, &seat.Col); err != nil {
			panic(err)
		}
		out = append(out, seat)
	}
	return out
}

func TestPickBestOrder(t *testing.T) {
	row130 := func(free ...int) string {
		b := []byte(strings.Repeat("x", 130))
		for _, c := range free {
			b[c] = '.'
		}
		return string(b)
	}
	tests := []struct {
		name string
		area []string
		n    int
		want string // "" for none
	}{
		{"one seat: the centre of the front row", []string{".....", ".....", "....."}, 1, "0,2"},
		{"even block in odd row: two centred blocks tie, left wins", []string{".....", "....."}, 2, "0,1 0,2"},
		{"even block in even row: exactly centred", []string{"......", "......"}, 2, "0,2 0,3"},
		{"odd block in even row: tie, left wins", []string{"......"}, 3, "0,1 0,2 0,3"},
		{"front row first, even off-centre", []string{"xxxx..", "......"}, 2, "0,4 0,5"},
		{"nearest the centre among the row's blocks", []string{"x.....xx.."}, 2, "0,4 0,5"},
		{"equal distance either side: left wins", []string{"..x.x.."}, 2, "0,0 0,1"},
		{"right of centre when nearer", []string{"..xx.x..."}, 2, "0,6 0,7"},
		{"enough free seats but no run: next row", []string{"x.x.x.x.", "........"}, 2, "1,3 1,4"},
		{"block of a whole row", []string{"....."}, 5, "0,0 0,1 0,2 0,3 0,4"},
		{"whole row, front row has one taken", []string{"..x..", "....."}, 5, "1,0 1,1 1,2 1,3 1,4"},
		{"last column", []string{"xxxx."}, 1, "0,4"},
		{"last two columns", []string{"xxx.."}, 2, "0,3 0,4"},
		{"first column", []string{".xxxx"}, 1, "0,0"},
		{"single-seat area", []string{"."}, 1, "0,0"},
		{"more than a row", []string{".....", "....."}, 6, ""},
		{"fragmented: free seats but no two adjacent", []string{".x.", ".x.", "x.x"}, 2, ""},
		{"sold out", []string{"xxx", "xxx"}, 1, ""},
		{"more than the free seats", []string{"xx..", "xxxx"}, 3, ""},
		{"zero seats", []string{"...."}, 0, ""},
		{"negative", []string{"...."}, -1, ""},
		{"wide row: centre across a word boundary", []string{strings.Repeat(".", 130)}, 3, "0,63 0,64 0,65"},
		{"wide row: block straddles words", []string{row130(62, 63, 64, 65, 66)}, 5, "0,62 0,63 0,64 0,65 0,66"},
		{"wide row: only block at the far end", []string{row130(0, 127, 128, 129)}, 3, "0,127 0,128 0,129"},
		{"wide row: only block at the start", []string{row130(0, 1, 66, 129)}, 2, "0,0 0,1"},
		{"wide row: block longer than a word", []string{row130(append([]int{0}, seq(40, 100)...)...)}, 70, ""},
		{"wide row: long block fits", []string{row130(seq(20, 110)...)}, 70, seatString(0, 30, 70)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := areaFrom(t, tt.area...)
			before := a.SeatMap()
			got, ok := a.PickBest(tt.n)
			if want := seatsOf(tt.want); !slices.Equal(got, want) || ok != (len(want) > 0) {
				t.Fatalf("PickBest(%d) = %v, %v; want %v", tt.n, got, ok, want)
			}
			if !slices.Equal(a.SeatMap(), before) {
				t.Fatalf("PickBest changed the seat map: %q → %q", before, a.SeatMap())
			}
		})
	}
}

// seq returns from, from+1, ..., to-1.
func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// seatString formats n seats of row r from column c on as seatsOf parses.
func seatString(r, c, n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf("%d,%d", r, c+i))
	}
	return strings.Join(parts, " ")
}

func TestReserve(t *testing.T) {
	tests := []struct {
		name      string
		area      []string
		req       ReserveRequest
		want      string // seats taken
		reason    Reason
		detail    string
		wantAfter []string // seat map after; nil means unchanged
	}{
		{
			name: "random takes the best block",
			area: []string{"......", "......"}, req: ReserveRequest{Kind: Random, NumOfSeats: 2},
			want: "0,2 0,3", wantAfter: []string{"..xx..", "......"},
		},
		{
			name: "random zero seats",
			area: []string{"...."}, req: ReserveRequest{Kind: Random, NumOfSeats: 0},
			reason: ReasonInvalidArgument, detail: "0 continuous seats is invalid: must be 1 to 50",
		},
		{
			name: "random negative seats",
			area: []string{"...."}, req: ReserveRequest{Kind: Random, NumOfSeats: -3},
			reason: ReasonInvalidArgument, detail: "-3 continuous seats is invalid: must be 1 to 50",
		},
		{
			name: "random above the cap",
			area: []string{strings.Repeat(".", 60)}, req: ReserveRequest{Kind: Random, NumOfSeats: 51},
			reason: ReasonInvalidArgument, detail: "51 continuous seats is invalid: must be 1 to 50",
		},
		{
			name: "random longer than a row",
			area: []string{"....", "...."}, req: ReserveRequest{EventID: "e", AreaID: "A", Kind: Random, NumOfSeats: 5},
			reason: ReasonNotAvailable, detail: "no continuous 5 seats at area A in event e",
		},
		{
			name: "random fragmented",
			area: []string{".x.", "x.x"}, req: ReserveRequest{EventID: "e", AreaID: "A", Kind: Random, NumOfSeats: 2},
			reason: ReasonNotAvailable, detail: "no continuous 2 seats at area A in event e",
		},
		{
			name: "random ignores listed seats",
			area: []string{"...", "..."}, req: ReserveRequest{Kind: Random, NumOfSeats: 1, Seats: seatsOf("1,0")},
			want: "0,1", wantAfter: []string{".x.", "..."},
		},
		{
			name: "self-pick takes exactly the list, in its order",
			area: []string{"....", "...."}, req: ReserveRequest{Kind: SelfPick, NumOfSeats: 3, Seats: seatsOf("1,3 0,0 1,1")},
			want: "1,3 0,0 1,1", wantAfter: []string{"x...", ".x.x"},
		},
		{
			name: "self-pick with numOfSeats omitted",
			area: []string{"...."}, req: ReserveRequest{Kind: SelfPick, Seats: seatsOf("0,3")},
			want: "0,3", wantAfter: []string{"...x"},
		},
		{
			name: "self-pick numOfSeats contradicts the list",
			area: []string{"...."}, req: ReserveRequest{Kind: SelfPick, NumOfSeats: 2, Seats: seatsOf("0,3")},
			reason: ReasonInvalidArgument, detail: "numOfSeats is 2 but 1 seats are picked",
		},
		{
			name: "self-pick of nothing",
			area: []string{"...."}, req: ReserveRequest{Kind: SelfPick, NumOfSeats: 0},
			reason: ReasonInvalidArgument, detail: "no seats picked",
		},
		{
			name: "self-pick all or nothing: one seat taken",
			area: []string{"..x.", "...."}, req: ReserveRequest{EventID: "e", AreaID: "A", Kind: SelfPick, Seats: seatsOf("0,0 0,1 0,2 0,3")},
			reason: ReasonNotAvailable, detail: "e#A (0, 2) is unavailable.",
		},
		{
			name: "self-pick column past the end",
			area: []string{"..", ".."}, req: ReserveRequest{EventID: "event", AreaID: "A", Kind: SelfPick, Seats: seatsOf("0,1 0,2")},
			reason: ReasonInvalidSeat, detail: "event#A (0, 2) is not a valid seat.",
		},
		{
			name: "self-pick negative column",
			area: []string{"..", ".."}, req: ReserveRequest{EventID: "event", AreaID: "A", Kind: SelfPick, Seats: seatsOf("0,-1")},
			reason: ReasonInvalidSeat, detail: "event#A (0, -1) is not a valid seat.",
		},
		{
			name: "self-pick negative row",
			area: []string{"..", ".."}, req: ReserveRequest{EventID: "event", AreaID: "A", Kind: SelfPick, Seats: seatsOf("-1,0")},
			reason: ReasonInvalidSeat, detail: "event#A (-1, 0) is not a valid seat.",
		},
		{
			name: "self-pick row past the end",
			area: []string{"..", ".."}, req: ReserveRequest{EventID: "event", AreaID: "A", Kind: SelfPick, Seats: seatsOf("2,0")},
			reason: ReasonInvalidSeat, detail: "event#A (2, 0) is not a valid seat.",
		},
		{
			name: "self-pick lists a seat twice",
			area: []string{"...."}, req: ReserveRequest{EventID: "e", AreaID: "A", Kind: SelfPick, Seats: seatsOf("0,1 0,2 0,1")},
			reason: ReasonInvalidSeat, detail: "e#A (0, 1) is listed twice.",
		},
		{
			name: "self-pick: the first failing seat decides",
			area: []string{"x...."}, req: ReserveRequest{EventID: "e", AreaID: "A", Kind: SelfPick, Seats: seatsOf("0,9 0,0")},
			reason: ReasonInvalidSeat, detail: "e#A (0, 9) is not a valid seat.",
		},
		{
			name: "self-pick above the cap",
			area: []string{strings.Repeat(".", 60)}, req: ReserveRequest{Kind: SelfPick, Seats: seatsOf(seatString(0, 0, 51))},
			reason: ReasonInvalidArgument, detail: "51 seats picked: at most 50 per reservation",
		},
		{
			name: "unknown kind",
			area: []string{"...."}, req: ReserveRequest{Kind: "BEST", NumOfSeats: 1},
			reason: ReasonInvalidArgument, detail: `"BEST" reservation strategy is not implemented`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.EventID == "" {
				tt.req.EventID, tt.req.AreaID = "e", "A"
			}
			a := areaFrom(t, tt.area...)
			free := a.Free()
			seats, reason, detail := a.Reserve(tt.req)
			if want := seatsOf(tt.want); !slices.Equal(seats, want) || reason != tt.reason || detail != tt.detail {
				t.Fatalf("Reserve = %v, %q, %q; want %v, %q, %q", seats, reason, detail, want, tt.reason, tt.detail)
			}
			wantAfter := tt.wantAfter
			if wantAfter == nil {
				wantAfter = tt.area
			}
			if got := a.SeatMap(); !slices.Equal(got, wantAfter) {
				t.Fatalf("seat map after = %q; want %q", got, wantAfter)
			}
			if a.Free() != free-len(seats) {
				t.Fatalf("Free() = %d after taking %d of %d", a.Free(), len(seats), free)
			}
		})
	}
}

func TestReserveCopiesPickedSeats(t *testing.T) {
	a := NewArea(2, 2)
	picked := seatsOf("0,0 1,1")
	seats, reason, _ := a.Reserve(ReserveRequest{Kind: SelfPick, Seats: picked})
	if reason != "" {
		t.Fatalf("reason %q", reason)
	}
	picked[0] = Seat{1, 0}
	if seats[0] != (Seat{0, 0}) {
		t.Fatalf("returned seats alias the request: %v", seats)
	}
}

func TestReleaseAndResell(t *testing.T) {
	a := areaFrom(t, "x.x.x", ".x.x.")
	if _, ok := a.PickBest(2); ok {
		t.Fatal("PickBest(2) found a block in a fragmented area")
	}
	// Releasing one seat joins a run of two; the row must be searched again.
	a.Release(seatsOf("1,1"))
	got, ok := a.PickBest(2)
	if want := seatsOf("1,1 1,2"); !ok || !slices.Equal(got, want) {
		t.Fatalf("after release PickBest(2) = %v, %v; want %v", got, ok, want)
	}
	seats, reason, _ := a.Reserve(ReserveRequest{Kind: Random, NumOfSeats: 3})
	if want := seatsOf("1,0 1,1 1,2"); reason != "" || !slices.Equal(seats, want) {
		t.Fatalf("Reserve 3 = %v, %q; want %v", seats, reason, want)
	}
	a.Release(seats)
	if _, reason, _ := a.Reserve(ReserveRequest{Kind: SelfPick, Seats: seats}); reason != "" {
		t.Fatalf("the released seats do not resell: %q", reason)
	}
	if got, want := a.SeatMap(), []string{"x.x.x", "xxxx."}; !slices.Equal(got, want) {
		t.Fatalf("seat map %q; want %q", got, want)
	}
	if a.Free() != 3 {
		t.Fatalf("Free() = %d; want 3", a.Free())
	}
}

func TestTakeAndReleasePanicOnBrokenPreconditions(t *testing.T) {
	tests := []struct {
		name string
		op   func(a *Area)
		want string
	}{
		{"take a taken seat", func(a *Area) { a.Take(seatsOf("1,1 0,0")) }, "Take: seat (0, 0) of a 2x3 area is taken"},
		{"take a seat twice", func(a *Area) { a.Take(seatsOf("1,1 1,1")) }, "Take: seat (1, 1) of a 2x3 area is taken"},
		{"take out of range", func(a *Area) { a.Take(seatsOf("1,1 2,0")) }, "Take: seat (2, 0) of a 2x3 area is out of range"},
		{"release a free seat", func(a *Area) { a.Release(seatsOf("0,0 1,2")) }, "Release: seat (1, 2) of a 2x3 area is free"},
		{"release a seat twice", func(a *Area) { a.Release(seatsOf("0,0 0,0")) }, "Release: seat (0, 0) of a 2x3 area is free"},
		{"release out of range", func(a *Area) { a.Release(seatsOf("0,0 0,-1")) }, "Release: seat (0, -1) of a 2x3 area is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := areaFrom(t, "x..", "...")
			panicked := func() (msg any) {
				defer func() { msg = recover() }()
				tt.op(a)
				return nil
			}()
			if got, _ := panicked.(string); !strings.Contains(got, tt.want) {
				t.Fatalf("panic %v; want one containing %q", panicked, tt.want)
			}
			if got, want := a.SeatMap(), []string{"x..", "..."}; !slices.Equal(got, want) || a.Free() != 5 {
				t.Fatalf("after the panic the area is %q with %d free; want %q with 5", got, a.Free(), want)
			}
		})
	}
}

func TestNewAreaRejectsEmpty(t *testing.T) {
	for _, size := range [][2]int{{0, 5}, {5, 0}, {-1, 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewArea(%d, %d) did not panic", size[0], size[1])
				}
			}()
			NewArea(size[0], size[1])
		}()
	}
}

func TestAreaAccessors(t *testing.T) {
	a := areaFrom(t, "x..", "..x")
	if a.Rows() != 2 || a.Cols() != 3 || a.Free() != 4 {
		t.Fatalf("Rows, Cols, Free = %d, %d, %d; want 2, 3, 4", a.Rows(), a.Cols(), a.Free())
	}
	for _, tt := range []struct {
		seat          Seat
		inRange, free bool
	}{{Seat{0, 0}, true, false}, {Seat{0, 1}, true, true}, {Seat{1, 2}, true, false}, {Seat{2, 0}, false, false}, {Seat{0, 3}, false, false}} {
		if a.InRange(tt.seat) != tt.inRange || a.IsFree(tt.seat) != tt.free {
			t.Errorf("%v: InRange %v IsFree %v; want %v %v", tt.seat, a.InRange(tt.seat), a.IsFree(tt.seat), tt.inRange, tt.free)
		}
	}
}

// model is a naive reference seat map: which reservation holds each seat
// (0 for none), row by row.
type model struct {
	rows, cols int
	holder     []int
	held       int
}

func newModel(rows, cols int) *model {
	return &model{rows: rows, cols: cols, holder: make([]int, rows*cols)}
}

func (m *model) inRange(s Seat) bool {
	return s.Row >= 0 && s.Row < m.rows && s.Col >= 0 && s.Col < m.cols
}

func (m *model) holderOf(s Seat) int { return m.holder[s.Row*m.cols+s.Col] }

func (m *model) set(s Seat, id int) {
	switch {
	case id != 0 && m.holderOf(s) == 0:
		m.held++
	case id == 0 && m.holderOf(s) != 0:
		m.held--
	}
	m.holder[s.Row*m.cols+s.Col] = id
}

// best tries every block of every row: the first row with a block wins,
// then the least |2c+n-cols| (twice the distance of the centres), then the
// leftmost.
func (m *model) best(n int) []Seat {
	for r := range m.rows {
		// run[c] is the number of free seats from c rightwards.
		run := make([]int, m.cols+1)
		for c := m.cols - 1; c >= 0; c-- {
			if m.holderOf(Seat{r, c}) == 0 {
				run[c] = run[c+1] + 1
			}
		}
		bestC, bestD := -1, 0
		for c := 0; c+n <= m.cols; c++ {
			if run[c] >= n {
				if d := abs(2*c + n - m.cols); bestC < 0 || d < bestD {
					bestC, bestD = c, d
				}
			}
		}
		if bestC >= 0 {
			return block(r, bestC, n)
		}
	}
	return nil
}

func abs(x int) int { return max(x, -x) }

// expect is the reason the model gives a request (seats when reason is "").
func (m *model) expect(req ReserveRequest) ([]Seat, Reason) {
	switch req.Kind {
	case Random:
		if req.NumOfSeats < 1 || req.NumOfSeats > MaxSeatsPerReservation {
			return nil, ReasonInvalidArgument
		}
		if seats := m.best(req.NumOfSeats); seats != nil {
			return seats, ""
		}
		return nil, ReasonNotAvailable
	case SelfPick:
		k := len(req.Seats)
		if k == 0 || k > MaxSeatsPerReservation || (req.NumOfSeats != 0 && req.NumOfSeats != k) {
			return nil, ReasonInvalidArgument
		}
		for i, s := range req.Seats {
			if !m.inRange(s) || slices.Contains(req.Seats[:i], s) {
				return nil, ReasonInvalidSeat
			}
			if m.holderOf(s) != 0 {
				return nil, ReasonNotAvailable
			}
		}
		return req.Seats, ""
	}
	return nil, ReasonInvalidArgument
}

func (m *model) seatMap() []string {
	out := make([]string, m.rows)
	for r := range m.rows {
		b := []byte(strings.Repeat(".", m.cols))
		for c := range m.cols {
			if m.holderOf(Seat{r, c}) != 0 {
				b[c] = 'x'
			}
		}
		out[r] = string(b)
	}
	return out
}

// harness runs requests against an Area and a model side by side.
type harness struct {
	t     testing.TB
	a     *Area
	m     *model
	holds map[int][]Seat
	next  int
}

func newHarness(t testing.TB, rows, cols int) *harness {
	return &harness{t: t, a: NewArea(rows, cols), m: newModel(rows, cols), holds: map[int][]Seat{}}
}

func (h *harness) reserve(req ReserveRequest) {
	h.t.Helper()
	wantSeats, wantReason := h.m.expect(req)
	seats, reason, detail := h.a.Reserve(req)
	if reason != wantReason || !slices.Equal(seats, wantSeats) {
		h.t.Fatalf("Reserve(%+v) = %v, %q (%s); the model says %v, %q", req, seats, reason, detail, wantSeats, wantReason)
	}
	if reason == "" {
		h.next++
		for _, s := range seats {
			if holder := h.m.holderOf(s); holder != 0 {
				h.t.Fatalf("seat %v given to reservation %d is held by %d", s, h.next, holder)
			}
			h.m.set(s, h.next)
		}
		h.holds[h.next] = seats
	} else if detail == "" {
		h.t.Fatalf("Reserve(%+v) failed %q without a detail", req, reason)
	}
}

// releaseAny releases the hold picked by r, if any.
func (h *harness) releaseAny(r uint64) {
	if len(h.holds) == 0 {
		return
	}
	ids := make([]int, 0, len(h.holds))
	for id := range h.holds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := ids[r%uint64(len(ids))]
	h.a.Release(h.holds[id])
	for _, s := range h.holds[id] {
		h.m.set(s, 0)
	}
	delete(h.holds, id)
}

func (h *harness) check() {
	h.t.Helper()
	if got, want := h.a.Free(), h.m.rows*h.m.cols-h.m.held; got != want {
		h.t.Fatalf("Free() = %d; model %d", got, want)
	}
	if got, want := h.a.SeatMap(), h.m.seatMap(); !slices.Equal(got, want) {
		h.t.Fatalf("seat map %q; model %q", got, want)
	}
}

// checkAllPicks compares PickBest with the model for every block length.
func (h *harness) checkAllPicks() {
	h.t.Helper()
	for n := 1; n <= h.m.cols+1; n++ {
		got, ok := h.a.PickBest(n)
		if want := h.m.best(n); !slices.Equal(got, want) || ok != (want != nil) {
			h.t.Fatalf("PickBest(%d) = %v, %v; model %v", n, got, ok, want)
		}
	}
}

func TestAreaMatchesModel(t *testing.T) {
	sizes := [][2]int{{1, 1}, {3, 5}, {4, 20}, {20, 20}, {2, 64}, {2, 65}, {3, 130}}
	for _, size := range sizes {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(size[0]), uint64(size[1])))
			h := newHarness(t, size[0], size[1])
			for range 3000 {
				randomOp(h, rng)
				h.check()
			}
			h.checkAllPicks()
		})
	}
}

// randomOp applies one random request or release: mostly small Random
// blocks, some long ones, self-picks that may hit taken, repeated or
// out-of-range seats, and releases so that seats are resold.
func randomOp(h *harness, rng *rand.Rand) {
	rows, cols := h.m.rows, h.m.cols
	switch p := rng.IntN(100); {
	case p < 50:
		h.reserve(ReserveRequest{Kind: Random, NumOfSeats: 1 + rng.IntN(min(cols, 4))})
	case p < 55:
		h.reserve(ReserveRequest{Kind: Random, NumOfSeats: rng.IntN(cols + 2)})
	case p < 75:
		seats := make([]Seat, 1+rng.IntN(4))
		for i := range seats {
			seats[i] = Seat{rng.IntN(rows+1) - rng.IntN(2), rng.IntN(cols+1) - rng.IntN(2)}
		}
		h.reserve(ReserveRequest{Kind: SelfPick, Seats: seats})
	default:
		h.releaseAny(rng.Uint64())
	}
}
