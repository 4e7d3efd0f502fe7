package measure

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/surge-dev/surge/internal/bench/units"
)

// MachineStalls is what the machine itself took from a run's measured
// phase, measured beside the load the way jHiccup does for the JVM: a
// thread of the load generator that only sleeps a millisecond at a time
// records how late each sleep ends. A thread ready to run waits like that
// whenever the hypervisor has taken its vCPU, or other threads hold the
// CPUs, and the server's and the load generator's threads wait alike: when
// the machine stalls long and often enough, a latency percentile measures
// the machine, not the server. (Result.MachineCPU says how much of the
// machine's CPU time the hypervisor took meanwhile.)
type MachineStalls struct {
	// Elapsed is how long the meter watched (the measured phase), in seconds.
	Elapsed Seconds `json:"elapsed_s"`
	// PeriodMs is how long each of the meter's sleeps asked for.
	PeriodMs float64 `json:"period_ms"`
	// Samples counts the meter's sleeps.
	Samples int64 `json:"samples"`
	// Stalls counts the sleeps that overran by StallMin or more, Stalled
	// sums those overruns, and StalledShare is Stalled over Elapsed.
	// Shorter overruns are what waking a thread costs, not stalls.
	Stalls       int64   `json:"stalls"`
	Stalled      Seconds `json:"stalled_s"`
	StalledShare float64 `json:"stalled_share"`
	// P99Ms is the overrun still ahead at the 99th percentile of the
	// phase's moments: a stall counts once for every period it lasted
	// (jHiccup's correction), as a request due at each of those moments
	// would have waited out the rest of it. MaxMs is the longest overrun.
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// StallHistograms are the meter's distributions, which explain missed
// latency bounds while a run is judged. They stay beside its Result, not
// in it: a Result is what reads back from JSON.
type StallHistograms struct {
	// Overruns has one value per sleep; Timed adds, for a long overrun,
	// the periods it swallowed, so that it counts moments, not sleeps.
	Overruns, Timed *hdrhistogram.Histogram
}

// StallMin is the shortest overrun of the meter's sleep that counts as a
// stall of the machine.
const StallMin = time.Millisecond

// stallSigFigs is the precision of the stall histograms: 1% is plenty to
// read a stall's length, and keeps each histogram a few tens of kilobytes.
const stallSigFigs = 2

// StallTally accumulates the meter's samples. It is pure arithmetic, fed
// one overrun per sleep, so that what the meter reports can be checked
// against known inputs.
type StallTally struct {
	period  time.Duration
	samples int64
	stalls  int64
	stalled time.Duration
	longest time.Duration
	StallHistograms
}

func NewStallTally(period time.Duration) *StallTally {
	return &StallTally{period: period, StallHistograms: StallHistograms{
		Overruns: hdrhistogram.New(1, histMaxMicros, stallSigFigs),
		Timed:    hdrhistogram.New(1, histMaxMicros, stallSigFigs),
	}}
}

// record adds one sleep that ended overrun later than it asked.
func (t *StallTally) Record(overrun time.Duration) {
	overrun = max(overrun, 0)
	t.samples++
	t.longest = max(t.longest, overrun)
	if overrun >= StallMin {
		t.stalls++
		t.stalled += overrun
	}
	us := ClampMicros(overrun)
	// Cannot fail: us is within range by construction.
	_ = t.Overruns.RecordValue(us)
	_ = t.Timed.RecordCorrectedValue(us, t.period.Microseconds())
}

// report is what the tally says of a phase that lasted elapsed, and the
// distributions behind it.
func (t *StallTally) Report(elapsed time.Duration) (*MachineStalls, *StallHistograms) {
	return &MachineStalls{
		Elapsed:      ToSeconds(elapsed),
		PeriodMs:     DurationMs(t.period),
		Samples:      t.samples,
		Stalls:       t.stalls,
		Stalled:      ToSeconds(t.stalled),
		StalledShare: t.stalled.Seconds() / max(elapsed.Seconds(), 1e-9),
		P99Ms:        microsToMs(t.Timed.ValueAtQuantile(99)),
		MaxMs:        DurationMs(t.longest),
	}, &t.StallHistograms
}

func DurationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// String is the summary's line, such as "3.70% of the run stalled (82
// stalls ≥ 1ms, p99 9.3ms, max 73ms)".
func (s *MachineStalls) String() string {
	noun := "stalls"
	if s.Stalls == 1 {
		noun = "stall"
	}
	return fmt.Sprintf("%s of the run stalled (%d %s ≥ %s, p99 %s, max %s)", units.Percent(s.StalledShare), s.Stalls, noun,
		units.K6Duration(StallMin), units.K6Duration(units.MsDuration(s.P99Ms)), units.K6Duration(units.MsDuration(s.MaxMs)))
}
