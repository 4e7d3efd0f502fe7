package bench

import "math"

// HistogramBucket is one bar of a run's latency histogram: the requests
// whose latency was above the previous bucket's UpToMs and at most this
// one's.
type HistogramBucket struct {
	UpToMs float64 `json:"up_to_ms"`
	Count  int64   `json:"count"`
}

// SalePoint is one step of a spike's sales curve.
type SalePoint struct {
	// Second is the time since the start of the measured phase.
	Second float64 `json:"t_s"`
	// Sold is the seats sold by then, in all.
	Sold int64 `json:"sold"`
}

// histogramBuckets is how many bars a histogram has: enough to show the
// shape of a distribution, few enough to read each one.
const histogramBuckets = 40

// Histogram returns the latency histogram of every recorded request in
// logarithmically spaced buckets from the fastest to the slowest request,
// so that a fast bulk and a slow tail both show.
func (r *Recorder) Histogram() []HistogramBucket {
	if r.counts.Requests == 0 {
		return nil
	}
	lo := max(float64(r.Min().Microseconds()), 1)
	hi := max(float64(r.Max().Microseconds()), lo+1)
	step := math.Pow(hi/lo, 1.0/histogramBuckets)
	out := make([]HistogramBucket, histogramBuckets)
	for i := range out {
		out[i].UpToMs = lo * math.Pow(step, float64(i+1)) / 1e3
	}
	for _, bar := range r.hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		mid := float64(bar.From+bar.To) / 2
		i := int(math.Log(max(mid, lo)/lo) / math.Log(step))
		out[min(max(i, 0), histogramBuckets-1)].Count += bar.Count
	}
	return out
}
