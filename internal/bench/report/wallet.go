package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// ghz's summary shape: ten histogram buckets between the fastest and the
// slowest call, bars of at most 40 marks, and these percentiles.
const (
	ghzBuckets = 10
	ghzBarMax  = 40
)

var ghzPercentiles = []float64{10, 25, 50, 75, 90, 95, 99}

// writeGHZSummary prints r in the shape of ghz's summary, as report 001
// quotes it, so the two compare line by line.
func writeGHZSummary(w io.Writer, r *Result) error {
	var b strings.Builder
	ok := r.Totals.Requests - r.Totals.Failed
	fmt.Fprintf(&b, "\nSummary:\n")
	fmt.Fprintf(&b, "  Count:\t%d\n", r.Totals.Requests)
	fmt.Fprintf(&b, "  Total:\t%s\n", ghzDuration(r.Totals.Elapsed.Duration()))
	fmt.Fprintf(&b, "  Slowest:\t%.2f ms\n", r.Latency.Max)
	fmt.Fprintf(&b, "  Fastest:\t%.2f ms\n", r.Latency.Min)
	fmt.Fprintf(&b, "  Average:\t%.2f ms\n", r.Latency.Avg)
	fmt.Fprintf(&b, "  Requests/sec:\t%.2f\n", measure.PerSecond(r.Totals.Requests, float64(r.Totals.Elapsed)))
	b.WriteString("\nResponse time histogram:\n")
	writeGHZHistogram(&b, r)
	b.WriteString("\nLatency distribution:\n")
	for _, p := range ghzPercentiles {
		fmt.Fprintf(&b, "  %g %% in %.2f ms \n", p, spectrumAt(r.Spectrum, p))
	}
	b.WriteString("\nStatus code distribution:\n")
	if ok > 0 {
		fmt.Fprintf(&b, "  [OK]   %d responses   \n", ok)
	}
	for _, code := range slices.Sorted(maps.Keys(r.Failures)) {
		fmt.Fprintf(&b, "  [%s]   %d responses   \n", code, r.Failures[code])
	}
	if len(r.FailureExamples) > 0 {
		b.WriteString("\nError distribution:\n")
		for _, code := range slices.Sorted(maps.Keys(r.FailureExamples)) {
			fmt.Fprintf(&b, "  [%d]   rpc error: code = %s desc = %s   \n", r.Failures[code], code, r.FailureExamples[code])
		}
	}
	if v := r.Verdict; v != nil {
		verdict := "missed"
		if v.Pass {
			verdict = "met"
		}
		fmt.Fprintf(&b, "\nTarget: %s — %s (%s)\n", v.Target, verdict, v.Detail)
	}
	if c := r.Client; c.CPU >= 0 {
		fmt.Fprintf(&b, "Load generator CPU: %.1f%% of one core, %.1fµs per call\n", c.CPUShare*100, c.MicrosPerRequest)
	}
	if m := r.MachineCPU; m != nil {
		fmt.Fprintf(&b, "Machine CPU during the run: %s\n", m)
	}
	if s := r.MachineStalls; s != nil {
		fmt.Fprintf(&b, "Machine stalls during the run: %s\n", s)
	}
	writeWarnings(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeGHZHistogram draws ghz's histogram: the count of calls up to each
// of ten evenly spaced marks from the fastest to the slowest.
func writeGHZHistogram(b *strings.Builder, r *Result) {
	lo, hi := r.Latency.Min, r.Latency.Max
	step := (hi - lo) / ghzBuckets
	marks := make([]float64, ghzBuckets+1)
	counts := make([]int64, ghzBuckets+1)
	var prev, most int64
	for i := range marks {
		marks[i] = lo + float64(i)*step
		upTo := countUpTo(r.Spectrum, marks[i])
		if i == ghzBuckets {
			upTo = r.Totals.Requests
		}
		counts[i] = max(upTo-prev, 0)
		prev = max(upTo, prev)
		most = max(most, counts[i])
	}
	for i, m := range marks {
		bar := 0
		if most > 0 {
			bar = int(counts[i] * ghzBarMax / most)
		}
		fmt.Fprintf(b, "  %.3f [%d]\t|%s\n", m, counts[i], strings.Repeat("∎", bar))
	}
}

// countUpTo is how many samples of the spectrum took at most ms.
func countUpTo(spectrum []measure.Quantile, ms float64) int64 {
	var n int64
	for _, q := range spectrum {
		if q.Ms > ms {
			break
		}
		n = q.Count
	}
	return n
}

// ghzDuration prints a total the way ghz does: ms below a second, else s.
func ghzDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
