package measure

import (
	"math"
	"time"
)

// StdDevMs is the standard deviation of the latencies, in milliseconds
// (from the histogram: three significant digits).
func (r *Recorder) StdDevMs() float64 {
	if r.timed == 0 {
		return 0
	}
	return r.hist.StdDev() / 1e3
}

// WithinStdev is the share of latencies within one standard deviation of
// the mean: wrk2's "+/- Stdev" column.
func (r *Recorder) WithinStdev() float64 {
	n := r.hist.TotalCount()
	if n == 0 {
		return 0
	}
	mean, sd := float64(r.Mean()/time.Microsecond), r.hist.StdDev()
	lo, hi := int64(math.Ceil(mean-sd)), int64(math.Floor(mean+sd))
	var in int64
	for _, bar := range r.hist.Distribution() {
		if bar.Count > 0 && bar.From >= lo && bar.To <= hi+1 {
			in += bar.Count
		}
	}
	return float64(in) / float64(n)
}

// FullSpectrum lists the cumulative count at every recorded latency, so
// that the ghz summary's histogram and percentiles can be read from a
// Result to the histogram's precision.
func (r *Recorder) FullSpectrum() []Quantile {
	total := r.hist.TotalCount()
	if total == 0 {
		return nil
	}
	var out []Quantile
	var cum int64
	for _, bar := range r.hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		cum += bar.Count
		ms := float64(r.clamp(time.Duration(bar.To)*time.Microsecond)) / float64(time.Millisecond)
		out = append(out, Quantile{Percentile: 100 * float64(cum) / float64(total), Ms: ms, Count: cum})
	}
	return out
}
