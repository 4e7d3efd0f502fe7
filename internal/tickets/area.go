// Package tickets is surge's flash-sale ticketing domain: events and the
// areas of seats they sell, seat selection, and the life of a reservation
// from its request to payment, cancellation or expiry.
//
// It is pure deterministic logic with no I/O, no goroutines and no clock of
// its own: callers pass the time in. An Area is owned by one goroutine (a
// shard), which is what makes double booking impossible without locks; the
// Area itself panics on any attempt to take a taken seat or free a free one.
package tickets

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Seat is one seat of an area by 0-based row and column. Row 0 is the row
// nearest the stage; columns run from one side of the row to the other.
type Seat struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// String formats a seat the way ticket-master's messages do: "(row, col)".
func (s Seat) String() string { return fmt.Sprintf("(%d, %d)", s.Row, s.Col) }

// Area is the seat map of one event area: which seats are free. It is not
// safe for concurrent use; one goroutine owns it.
//
// Each row is a bitset (bit set = seat free) with a count of its free seats,
// so that best-available selection skips full rows in O(1) and finds the
// blocks of n adjacent free seats of a row with a few word operations.
type Area struct {
	rows, cols int
	// words is the number of uint64 words per row.
	words int
	// free holds the rows' bitsets one after another; the bits past the last
	// column are always 0, so no block of free seats runs past a row's end.
	free    []uint64
	rowFree []int32
	// noRun[r] > 0 is a block length that row r is known not to fit. Taking
	// seats only shortens runs, so it stays true until a seat of the row is
	// released. It spares a fragmented row from being searched again.
	noRun     []int32
	freeSeats int
	// front is the first row with a free seat (rows when sold out): the
	// rows before it are full, so PickBest starts there.
	front int
	// scratch is one row of words for PickBest.
	scratch []uint64
}

// NewArea returns an area of rows×cols seats, all free. It panics if either
// is below 1; EventSpec.Validate bounds them from above.
func NewArea(rows, cols int) *Area {
	if rows < 1 || cols < 1 {
		panic(fmt.Sprintf("tickets: NewArea(%d, %d): rows and cols must be at least 1", rows, cols))
	}
	words := (cols + 63) / 64
	a := &Area{
		rows:      rows,
		cols:      cols,
		words:     words,
		free:      make([]uint64, rows*words),
		rowFree:   make([]int32, rows),
		noRun:     make([]int32, rows),
		freeSeats: rows * cols,
		scratch:   make([]uint64, words),
	}
	full := make([]uint64, words)
	for c := range cols {
		full[c/64] |= 1 << (c % 64)
	}
	for r := range rows {
		copy(a.row(r), full)
		a.rowFree[r] = int32(cols)
	}
	return a
}

// Rows is the number of rows.
func (a *Area) Rows() int { return a.rows }

// Cols is the number of seats per row.
func (a *Area) Cols() int { return a.cols }

// Free is the number of free seats.
func (a *Area) Free() int { return a.freeSeats }

// InRange reports whether s is a seat of this area.
func (a *Area) InRange(s Seat) bool {
	return s.Row >= 0 && s.Row < a.rows && s.Col >= 0 && s.Col < a.cols
}

// IsFree reports whether s is a seat of this area and free.
func (a *Area) IsFree(s Seat) bool {
	if !a.InRange(s) {
		return false
	}
	w, bit := a.bit(s)
	return a.free[w]&bit != 0
}

// Take marks seats taken. Precondition: every seat is in range, free and
// listed once (PickBest and a passed CheckPick guarantee it). A violation is
// a programming error that could double-book, so Take panics, after undoing
// what it took of the list.
func (a *Area) Take(seats []Seat) {
	for i, s := range seats {
		if !a.IsFree(s) {
			msg := fmt.Sprintf("tickets: Take: seat %v of a %dx%d area is %s", s, a.rows, a.cols, a.describe(s))
			for _, undo := range seats[:i] {
				a.setFree(undo)
			}
			panic(msg)
		}
		a.setTaken(s)
	}
}

// Release marks taken seats free again. Precondition: every seat is in
// range, taken and listed once. A violation means the caller's records
// disagree with the seat map, so Release panics, after undoing what it
// released of the list.
func (a *Area) Release(seats []Seat) {
	for i, s := range seats {
		if !a.InRange(s) || a.IsFree(s) {
			msg := fmt.Sprintf("tickets: Release: seat %v of a %dx%d area is %s", s, a.rows, a.cols, a.describe(s))
			for _, undo := range seats[:i] {
				a.setTaken(undo)
			}
			panic(msg)
		}
		a.setFree(s)
	}
}

func (a *Area) describe(s Seat) string {
	switch {
	case !a.InRange(s):
		return "out of range"
	case a.IsFree(s):
		return "free"
	default:
		return "taken"
	}
}

// PickBest returns the best block of n adjacent free seats in one row, in
// column order, without taking them: the block in the row nearest the stage,
// then the one whose centre is nearest the row's centre, then the leftmost.
// ok is false if no row has n adjacent free seats (or n < 1).
func (a *Area) PickBest(n int) (seats []Seat, ok bool) {
	if n < 1 || n > a.cols || n > a.freeSeats {
		return nil, false
	}
	for r := a.front; r < a.rows; r++ {
		if int(a.rowFree[r]) < n || (a.noRun[r] > 0 && n >= int(a.noRun[r])) {
			continue
		}
		if c, found := a.bestStart(r, n); found {
			return block(r, c, n), true
		}
		a.noRun[r] = int32(n)
	}
	return nil, false
}

// CheckPick checks a self-picked list of seats: reason is "" if every seat
// is in range, listed once and free, so Take may take them all; otherwise it
// is INVALID_SEAT or NOT_AVAILABLE for the first seat in the list that fails
// (INVALID_ARGUMENT for an empty list), and detail says which and why.
func (a *Area) CheckPick(seats []Seat) (reason Reason, detail string) {
	if len(seats) == 0 {
		return ReasonInvalidArgument, "no seats picked"
	}
	// Take the seats from the bitset alone (counters untouched) to see a
	// repeat as a seat that is no longer free; then put them all back.
	checked := 0
	for _, s := range seats {
		if !a.IsFree(s) {
			reason, detail = a.pickProblem(s, seats[:checked])
			break
		}
		w, bit := a.bit(s)
		a.free[w] &^= bit
		checked++
	}
	for _, s := range seats[:checked] {
		w, bit := a.bit(s)
		a.free[w] |= bit
	}
	return reason, detail
}

// pickProblem says why s, which is not free, cannot be picked after earlier.
func (a *Area) pickProblem(s Seat, earlier []Seat) (Reason, string) {
	switch {
	case !a.InRange(s):
		return ReasonInvalidSeat, s.String() + " is not a valid seat."
	case slices.Contains(earlier, s):
		return ReasonInvalidSeat, s.String() + " is listed twice."
	default:
		return ReasonNotAvailable, s.String() + " is unavailable."
	}
}

// SeatMap renders the area one string per row, row 0 first: '.' for a free
// seat, 'x' for a taken one.
func (a *Area) SeatMap() []string {
	out := make([]string, a.rows)
	var b strings.Builder
	for r := range a.rows {
		b.Reset()
		b.Grow(a.cols)
		for c := range a.cols {
			if a.IsFree(Seat{r, c}) {
				b.WriteByte('.')
			} else {
				b.WriteByte('x')
			}
		}
		out[r] = b.String()
	}
	return out
}

// row returns row r's bitset words.
func (a *Area) row(r int) []uint64 { return a.free[r*a.words : (r+1)*a.words] }

// bit locates an in-range seat's bit: its word index in a.free and mask.
func (a *Area) bit(s Seat) (int, uint64) {
	return s.Row*a.words + s.Col/64, 1 << (s.Col % 64)
}

func (a *Area) setTaken(s Seat) {
	w, bit := a.bit(s)
	a.free[w] &^= bit
	a.rowFree[s.Row]--
	a.freeSeats--
	for a.front < a.rows && a.rowFree[a.front] == 0 {
		a.front++
	}
}

func (a *Area) setFree(s Seat) {
	w, bit := a.bit(s)
	a.free[w] |= bit
	a.rowFree[s.Row]++
	a.freeSeats++
	a.noRun[s.Row] = 0
	a.front = min(a.front, s.Row)
}

// bestStart returns the first column of row r's best block of n adjacent
// free seats, if the row has one.
func (a *Area) bestStart(r, n int) (int, bool) {
	starts := a.scratch
	copy(starts, a.row(r))
	// Bit c of starts comes to mean "seats c..c+have-1 are free"; doubling
	// have each round reaches n in O(log n) passes over the row's words.
	for have := 1; have < n; {
		step := min(have, n-have)
		andShiftedRight(starts, step)
		have += step
	}
	// A block starting at c has its centre at c+(n-1)/2; the row's is at
	// (cols-1)/2. Twice their distance is |2c+n-cols|, least at c=(cols-n)/2:
	// the best block starts at the nearest set bit on either side of it.
	ideal := (a.cols - n) / 2
	left, hasLeft := lastSetAtOrBelow(starts, ideal)
	right, hasRight := firstSetAtOrAbove(starts, ideal+1)
	switch {
	case hasLeft && hasRight:
		if (a.cols - n - 2*left) <= (2*right + n - a.cols) {
			return left, true
		}
		return right, true
	case hasLeft:
		return left, true
	case hasRight:
		return right, true
	}
	return 0, false
}

// block returns the n seats of row r from column c on.
func block(r, c, n int) []Seat {
	seats := make([]Seat, n)
	for i := range seats {
		seats[i] = Seat{Row: r, Col: c + i}
	}
	return seats
}

// andShiftedRight sets words &= words >> shift, as one multiword bitset (bit
// i of words[k] is bit 64k+i). Ascending order works in place: word k reads
// only words k and above, which are not yet rewritten.
func andShiftedRight(words []uint64, shift int) {
	ws, bs := shift/64, uint(shift%64)
	for k := range words {
		var lo, hi uint64
		if k+ws < len(words) {
			lo = words[k+ws]
		}
		if k+ws+1 < len(words) {
			hi = words[k+ws+1]
		}
		shifted := lo
		if bs != 0 {
			shifted = lo>>bs | hi<<(64-bs)
		}
		words[k] &= shifted
	}
}

// lastSetAtOrBelow returns the highest set bit at index ≤ i (i ≥ 0).
func lastSetAtOrBelow(words []uint64, i int) (int, bool) {
	k := i / 64
	w := words[k] & (^uint64(0) >> (63 - i%64))
	for {
		if w != 0 {
			return k*64 + 63 - bits.LeadingZeros64(w), true
		}
		if k--; k < 0 {
			return 0, false
		}
		w = words[k]
	}
}

// firstSetAtOrAbove returns the lowest set bit at index ≥ i.
func firstSetAtOrAbove(words []uint64, i int) (int, bool) {
	k := i / 64
	if k >= len(words) {
		return 0, false
	}
	w := words[k] & (^uint64(0) << (i % 64))
	for {
		if w != 0 {
			return k*64 + bits.TrailingZeros64(w), true
		}
		if k++; k >= len(words) {
			return 0, false
		}
		w = words[k]
	}
}
