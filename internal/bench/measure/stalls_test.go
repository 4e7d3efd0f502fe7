package measure_test

import (
	"math"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/benchtest"
	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestStallTally(t *testing.T) {
	s, _ := benchtest.SyntheticStalls().Report(1250 * time.Millisecond)
	if s.Samples != 1000 || s.Stalls != 10 || s.Stalled != 0.2 || s.StalledShare != 0.16 || s.MaxMs != 20 ||
		s.PeriodMs != 1 || s.Elapsed != 1.25 {
		t.Errorf("report = %+v", s)
	}
	// Counting moments: each 20 ms stall adds one sample for each period
	// it swallowed (19 ms, 18 ms, ... 1 ms), so 20 of 1,190 samples are at
	// least 19 ms and the 99th percentile is 19 ms, to the histogram's 1%.
	if math.Abs(s.P99Ms-19) > 0.19 {
		t.Errorf("p99 = %v ms, want 19 ms", s.P99Ms)
	}
}

func TestStallTallyThreshold(t *testing.T) {
	tally := measure.NewStallTally(time.Millisecond)
	for _, d := range []time.Duration{-time.Microsecond, measure.StallMin - time.Microsecond, measure.StallMin, 3 * measure.StallMin} {
		tally.Record(d)
	}
	s, _ := tally.Report(time.Second)
	if s.Samples != 4 || s.Stalls != 2 || s.Stalled.Duration() != 4*measure.StallMin || s.MaxMs != 3 {
		t.Errorf("report = %+v: want the overruns of 1 ms and more counted as 2 stalls of 4 ms", s)
	}
}
