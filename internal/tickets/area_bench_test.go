package tickets

import (
	"fmt"
	"testing"
)

// BenchmarkReserveRandom reserves 1 to 4 adjacent seats per op, as the spike
// does, on areas filling up to sold out (then a fresh area): ns/op is the
// cost of one best-available reservation, failures near the end included.
func BenchmarkReserveRandom(b *testing.B) {
	for _, size := range [][2]int{{20, 20}, {100, 100}, {1000, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			a := NewArea(size[0], size[1])
			sold := 0
			for i := 0; b.Loop(); i++ {
				if a.Free() == 0 {
					b.StopTimer()
					a = NewArea(size[0], size[1])
					b.StartTimer()
				}
				seats, _, _ := a.Reserve(ReserveRequest{Kind: Random, NumOfSeats: 1 + i%4})
				sold += len(seats)
			}
			b.ReportMetric(float64(sold)/float64(b.N), "seats/op")
		})
	}
}

// BenchmarkPickBestFragmented asks for 2 adjacent seats in a 100×100 area
// where every other seat is taken: many free seats, no block. It is the
// worst case for the row scan.
func BenchmarkPickBestFragmented(b *testing.B) {
	a := NewArea(100, 100)
	for r := range 100 {
		for c := 0; c < 100; c += 2 {
			a.Take([]Seat{{r, c}})
		}
	}
	for b.Loop() {
		if _, ok := a.PickBest(2); ok {
			b.Fatal("found a block in a checkerboard")
		}
	}
}
