package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// StallNote explains the latency bounds run r missed that the machine's own
// stalls are enough to break ("machine stalled 3.70% of the probe, its own
// p99 9.3ms > 1ms: p99 is the machine's, not the server's"), or is "" when
// they are not, or were not measured (h is nil). It explains and never
// excuses: a missed bound stays missed. what names the phase: "run" or
// "probe".
func StallNote(h *measure.StallHistograms, r *Result, what string, missed []SLOTerm) string {
	if h == nil || r.MachineStalls == nil {
		return ""
	}
	var names, evidence []string
	for _, t := range missed {
		if why, ok := stallBreaks(h, r, t); ok {
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
		units.Percent(r.MachineStalls.StalledShare), what, strings.Join(evidence, ", "), strings.Join(names, " and "), verb)
}

// StallVerdictNote is StallNote, after "; ", for a verdict's latency bound t when
// the run's latency at t's quantile, gotMs, exceeded it.
func StallVerdictNote(h *measure.StallHistograms, r *Result, t SLOTerm, gotMs float64) string {
	if gotMs <= measure.DurationMs(t.Max) {
		return ""
	}
	if note := StallNote(h, r, "run", []SLOTerm{t}); note != "" {
		return "; " + note
	}
	return ""
}

// stallBreaks reports whether the machine's stalls alone would put the latency
// of run r at t's quantile beyond t's bound, with the figures that show it.
func stallBreaks(h *measure.StallHistograms, r *Result, t SLOTerm) (evidence string, breaks bool) {
	bound := measure.ClampMicros(t.Max)
	if r.KV != nil {
		// The open model: requests fall due at every moment and count
		// their latency from then, so one due while the machine stalled
		// waits out the rest of the stall. The share of moments with
		// more than the bound still ahead is the share of requests the
		// machine alone put beyond it.
		own := h.Timed.ValueAtQuantile(t.Quantile * 100)
		return fmt.Sprintf("its own %s %s > %s", t.Name, units.K6Duration(time.Duration(own)*time.Microsecond), units.K6Duration(t.Max)), own > bound
	}
	// A closed loop sends nothing while the machine stalls: a stall
	// delays at most the requests in flight, one per VU.
	n := countAbove(h.Overruns, bound)
	delayed := float64(n) * float64(r.Totals.VUs)
	return fmt.Sprintf("%d stalls > %s each delaying up to %d requests in flight", n, units.K6Duration(t.Max), r.Totals.VUs),
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
