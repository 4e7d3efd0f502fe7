package measure

import (
	"math"
	"time"
)

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

// HistogramBuckets is how many bars a histogram has: enough to show the
// shape of a distribution, few enough to read each one.
const HistogramBuckets = 40

// Histogram returns the latency histogram of every recorded request in
// logarithmically spaced buckets from the fastest to the slowest request,
// so that a fast bulk and a slow tail both show.
func (r *Recorder) Histogram() []HistogramBucket {
	if r.timed == 0 {
		return nil
	}
	lo := max(float64(r.Min().Microseconds()), 1)
	hi := max(float64(r.Max().Microseconds()), lo+1)
	step := math.Pow(hi/lo, 1.0/HistogramBuckets)
	out := make([]HistogramBucket, HistogramBuckets)
	for i := range out {
		out[i].UpToMs = lo * math.Pow(step, float64(i+1)) / 1e3
	}
	for _, bar := range r.hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		mid := float64(bar.From+bar.To) / 2
		i := int(math.Log(max(mid, lo)/lo) / math.Log(step))
		out[min(max(i, 0), HistogramBuckets-1)].Count += bar.Count
	}
	return out
}

// SalesTally counts the seats a run sold in each second, for Result.Sales:
// each VU keeps one (no lock on the hot path), and the scenario merges them
// when the run is over.
type SalesTally struct {
	origin    time.Time
	PerSecond []int64
}

// NewSalesTally returns a tally of a run whose measured phase starts at
// origin.
func NewSalesTally(origin time.Time) *SalesTally { return &SalesTally{origin: origin} }

// Add counts seats sold at t; a sale before origin counts in second 0.
func (s *SalesTally) Add(t time.Time, seats int) {
	sec := max(int(t.Sub(s.origin)/time.Second), 0)
	if sec >= len(s.PerSecond) {
		s.PerSecond = append(s.PerSecond, make([]int64, sec+1-len(s.PerSecond))...)
	}
	s.PerSecond[sec] += int64(seats)
}

// Merge adds o's sales to s.
func (s *SalesTally) Merge(o *SalesTally) {
	if len(o.PerSecond) > len(s.PerSecond) {
		s.PerSecond = append(s.PerSecond, make([]int64, len(o.PerSecond)-len(s.PerSecond))...)
	}
	for i, n := range o.PerSecond {
		s.PerSecond[i] += n
	}
}

// Curve is the sales curve: seats sold in all by the end of each second,
// from a point at 0 to the last second with a sale.
func (s *SalesTally) Curve() []SalePoint {
	if len(s.PerSecond) == 0 {
		return nil
	}
	out := make([]SalePoint, 0, len(s.PerSecond)+1)
	out = append(out, SalePoint{})
	var sold int64
	for i, n := range s.PerSecond {
		sold += n
		out = append(out, SalePoint{Second: float64(i + 1), Sold: sold})
	}
	return out
}
