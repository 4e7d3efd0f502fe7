package bench

import (
	"fmt"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
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

// stallHistograms are the meter's distributions, which explain missed
// latency bounds while a run is judged. They stay beside its Result, not
// in it: a Result is what reads back from JSON.
type stallHistograms struct {
	// overruns has one value per sleep; timed adds, for a long overrun,
	// the periods it swallowed, so that it counts moments, not sleeps.
	overruns, timed *hdrhistogram.Histogram
}

// StallMin is the shortest overrun of the meter's sleep that counts as a
// stall of the machine.
const StallMin = time.Millisecond

// stallSigFigs is the precision of the stall histograms: 1% is plenty to
// read a stall's length, and keeps each histogram a few tens of kilobytes.
const stallSigFigs = 2

// stallTally accumulates the meter's samples. It is pure arithmetic, fed
// one overrun per sleep, so that what the meter reports can be checked
// against known inputs.
type stallTally struct {
	period  time.Duration
	samples int64
	stalls  int64
	stalled time.Duration
	longest time.Duration
	stallHistograms
}

func newStallTally(period time.Duration) *stallTally {
	return &stallTally{period: period, stallHistograms: stallHistograms{
		overruns: hdrhistogram.New(1, histMaxMicros, stallSigFigs),
		timed:    hdrhistogram.New(1, histMaxMicros, stallSigFigs),
	}}
}

// record adds one sleep that ended overrun later than it asked.
func (t *stallTally) record(overrun time.Duration) {
	overrun = max(overrun, 0)
	t.samples++
	t.longest = max(t.longest, overrun)
	if overrun >= StallMin {
		t.stalls++
		t.stalled += overrun
	}
	us := clampMicros(overrun)
	// Cannot fail: us is within range by construction.
	_ = t.overruns.RecordValue(us)
	_ = t.timed.RecordCorrectedValue(us, t.period.Microseconds())
}

// report is what the tally says of a phase that lasted elapsed, and the
// distributions behind it.
func (t *stallTally) report(elapsed time.Duration) (*MachineStalls, *stallHistograms) {
	return &MachineStalls{
		Elapsed:      ToSeconds(elapsed),
		PeriodMs:     durationMs(t.period),
		Samples:      t.samples,
		Stalls:       t.stalls,
		Stalled:      ToSeconds(t.stalled),
		StalledShare: t.stalled.Seconds() / max(elapsed.Seconds(), 1e-9),
		P99Ms:        microsToMs(t.timed.ValueAtQuantile(99)),
		MaxMs:        durationMs(t.longest),
	}, &t.stallHistograms
}

func durationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// String is the summary's line, such as "3.70% of the run stalled (82
// stalls ≥ 1ms, p99 9.3ms, max 73ms)".
func (s *MachineStalls) String() string {
	noun := "stalls"
	if s.Stalls == 1 {
		noun = "stall"
	}
	return fmt.Sprintf("%s of the run stalled (%d %s ≥ %s, p99 %s, max %s)", percent(s.StalledShare), s.Stalls, noun,
		k6Duration(StallMin), k6Duration(msDuration(s.P99Ms)), k6Duration(msDuration(s.MaxMs)))
}

// note explains the latency bounds run r missed that the machine's own
// stalls are enough to break ("machine stalled 3.70% of the probe, its own
// p99 9.3ms > 1ms: p99 is the machine's, not the server's"), or is "" when
// they are not, or were not measured (h is nil). It explains and never
// excuses: a missed bound stays missed. what names the phase: "run" or
// "probe".
func (h *stallHistograms) note(r *Result, what string, missed []SLOTerm) string {
	if h == nil || r.MachineStalls == nil {
		return ""
	}
	var names, evidence []string
	for _, t := range missed {
		if why, ok := h.breaks(r, t); ok {
			names, evidence = append(names, t.Name), append(evidence, why)
		}
	}
	if len(names) == 0 {
		return ""
	}
	verb := "is"
	if len(names) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("machine stalled %s of the %s, %s: %s %s the machine's, not the server's",
		percent(r.MachineStalls.StalledShare), what, strings.Join(evidence, ", "), strings.Join(names, " and "), verb)
}

// verdictNote is note, after "; ", for a verdict's latency bound t when
// the run's latency at t's quantile, gotMs, exceeded it.
func (h *stallHistograms) verdictNote(r *Result, t SLOTerm, gotMs float64) string {
	if gotMs <= durationMs(t.Max) {
		return ""
	}
	if note := h.note(r, "run", []SLOTerm{t}); note != "" {
		return "; " + note
	}
	return ""
}

// breaks reports whether the machine's stalls alone would put the latency
// of run r at t's quantile beyond t's bound, with the figures that show it.
func (h *stallHistograms) breaks(r *Result, t SLOTerm) (evidence string, breaks bool) {
	bound := clampMicros(t.Max)
	if r.KV != nil {
		// The open model: requests fall due at every moment and count
		// their latency from then, so one due while the machine stalled
		// waits out the rest of the stall. The share of moments with
		// more than the bound still ahead is the share of requests the
		// machine alone put beyond it.
		own := h.timed.ValueAtQuantile(t.Quantile * 100)
		return fmt.Sprintf("its own %s %s > %s", t.Name, k6Duration(time.Duration(own)*time.Microsecond), k6Duration(t.Max)), own > bound
	}
	// A closed loop sends nothing while the machine stalls: a stall
	// delays at most the requests in flight, one per VU.
	n := countAbove(h.overruns, bound)
	delayed := float64(n) * float64(r.Totals.VUs)
	return fmt.Sprintf("%d stalls > %s each delaying up to %d requests in flight", n, k6Duration(t.Max), r.Totals.VUs),
		n > 0 && delayed >= (1-t.Quantile)*float64(r.Totals.Requests)
}

// countAbove is how many values of h are above us, to h's precision.
func countAbove(h *hdrhistogram.Histogram, us int64) int64 {
	var n int64
	for _, bar := range h.Distribution() {
		if bar.From > us {
			n += bar.Count
		}
	}
	return n
}
