package benchtest

import (
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// SyntheticStalls is a tally of a one-second phase of a meter that sleeps
// a millisecond at a time: 990 sleeps a little late, as waking a thread
// costs, and ten stalls of twenty sleeps' length.
func SyntheticStalls() *measure.StallTally {
	tally := measure.NewStallTally(time.Millisecond)
	for i := range 1000 {
		if i%100 == 99 {
			tally.Record(20 * time.Millisecond)
		} else {
			tally.Record(50 * time.Microsecond)
		}
	}
	return tally
}
