package tickets

import "testing"

// FuzzReserve drives an Area with requests decoded from bytes and checks it
// against the naive model after each: the same outcome and seats, the same
// seat map and free count, never a seat held twice.
func FuzzReserve(f *testing.F) {
	f.Add(uint8(2), uint8(4), []byte{0, 2, 0, 2, 0, 2, 0, 2, 0, 1})
	f.Add(uint8(1), uint8(129), []byte{0, 64, 0, 3, 8, 0, 2, 0, 0, 70})
	f.Add(uint8(3), uint8(3), []byte{1, 2, 0, 0, 0, 1, 1, 2, 1, 1, 1, 1, 0, 2})
	f.Add(uint8(4), uint8(6), []byte{5, 3, 1, 1, 1, 2, 1, 6, 0, 4, 0, 0xff, 3, 1, 2, 9})
	f.Fuzz(func(t *testing.T, rows, cols uint8, ops []byte) {
		h := newHarness(t, 1+int(rows%24), 1+int(cols%140))
		// Long inputs add little but time: the model's checks cost O(seats).
		ops = ops[:min(len(ops), 512)]
		for len(ops) >= 2 {
			ops = fuzzOp(h, ops)
			h.check()
		}
		h.checkAllPicks()
	})
}

// fuzzOp applies the operation at the head of ops and returns the rest. The
// low two bits of the first byte choose: a Random block of int8(next byte)
// seats, a self-pick of (next byte)%8 seats given as int8 row, col pairs
// (numOfSeats given when bit 2 is set), a release, or an unknown kind.
func fuzzOp(h *harness, ops []byte) []byte {
	op, arg, rest := ops[0], ops[1], ops[2:]
	switch op % 4 {
	case 0:
		h.reserve(ReserveRequest{Kind: Random, NumOfSeats: int(int8(arg))})
	case 1:
		var seats []Seat
		for range arg % 8 {
			if len(rest) < 2 {
				break
			}
			seats = append(seats, Seat{int(int8(rest[0])), int(int8(rest[1]))})
			rest = rest[2:]
		}
		req := ReserveRequest{Kind: SelfPick, Seats: seats}
		if op&4 != 0 {
			req.NumOfSeats = int(arg >> 3)
		}
		h.reserve(req)
	case 2:
		h.releaseAny(uint64(arg))
	default:
		h.reserve(ReserveRequest{Kind: "X", NumOfSeats: int(arg)})
	}
	return rest
}
