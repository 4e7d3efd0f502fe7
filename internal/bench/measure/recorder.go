package measure

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms count microseconds. Replies take tens of microseconds to
// seconds; a microsecond unit is far finer than three significant digits
// need at those values and keeps the counts array small. Anything slower
// than histMaxMicros is clamped (the exact maximum is kept separately).
const (
	histMaxMicros   = int64(time.Hour / time.Microsecond)
	totalSigFigs    = 3 // whole-run histogram: 0.1% resolution
	intervalSigFigs = 2 // per-second histograms: 1% is plenty for a chart, and 8× smaller
)

func newTotalHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, histMaxMicros, totalSigFigs)
}

// intervalPool recycles the Collector's per-second histograms, so a long
// run allocates a handful instead of one per second.
var intervalPool = sync.Pool{New: func() any {
	return hdrhistogram.New(1, histMaxMicros, intervalSigFigs)
}}

// microsPool recycles the slices in which VUs hand a second's latencies
// over to the Collector.
var microsPool = sync.Pool{New: func() any {
	s := make([]int64, 0, 64)
	return &s
}}

// recordMicros records d in h, clamped into the histogram's range.
func recordMicros(h *hdrhistogram.Histogram, d time.Duration) {
	// Cannot fail: the value is within range by construction.
	_ = h.RecordValue(ClampMicros(d))
}

// ClampMicros is d in microseconds, clamped into a histogram's range.
func ClampMicros(d time.Duration) int64 {
	return min(max(d.Microseconds(), 0), histMaxMicros)
}

// Outcome is what one measured request (or iteration) produced.
type Outcome struct {
	// Ops is the number of units of work the request carried, such as the
	// transfers in a batch. Zero counts as one.
	Ops int
	// FailedOps is how many of those units were rejected individually while
	// the request itself succeeded (items of a batch). When Failure is set
	// every op counts as failed and FailedOps is ignored.
	FailedOps int
	// Failure is empty for a successful request, else a stable key for the
	// failure breakdown, such as "422 insufficient_funds" or
	// "error connection_refused".
	Failure string
	// Detail optionally describes the failure; the first detail seen for
	// each key is kept as an example for the report.
	Detail string
	// Refused marks a request the server declined at once (503 with
	// Retry-After): it is counted as a failure, and its latency is kept
	// apart (Recorder.Refused), so that the latency figures are those of
	// the requests the server took.
	Refused bool
}

// ops returns how many units o carried and how many of them failed.
func (o Outcome) ops() (ops, failed int64) {
	ops = int64(o.Ops)
	if ops <= 0 {
		ops = 1
	}
	switch {
	case o.Failure != "":
		failed = ops
	case o.FailedOps > 0:
		failed = min(int64(o.FailedOps), ops)
	}
	return ops, failed
}

// counts are the additive tallies kept both per second and for a whole run.
type counts struct {
	Requests  int64
	Failed    int64
	Ops       int64
	FailedOps int64
}

func (c *counts) add(o Outcome) {
	ops, failedOps := o.ops()
	c.Requests++
	c.Ops += ops
	c.FailedOps += failedOps
	if o.Failure != "" {
		c.Failed++
	}
}

func (c *counts) merge(o counts) {
	c.Requests += o.Requests
	c.Failed += o.Failed
	c.Ops += o.Ops
	c.FailedOps += o.FailedOps
}

// interval is one worker's samples for one wall-clock second of a run.
// A worker's interval carries the second's latencies as they are (micros):
// recording each into the Collector's histogram costs what recording it
// into a worker's own would, and spares merging and resetting a histogram
// per worker and second, both of which walk its buckets. The Collector's
// interval of a second has hist, the merged latencies.
type interval struct {
	sec    int // whole seconds since the run's origin
	micros []int64
	hist   *hdrhistogram.Histogram
	counts
	maxNs int64
}

// Recorder accumulates one worker's samples. It is not safe for concurrent
// use: each worker owns one, which is what keeps recording lock-free.
// Finished seconds go to the Collector the Recorder was made by (if any);
// the whole-run figures are combined with Merge once the workers are done.
type Recorder struct {
	origin time.Time
	sink   chan<- *interval // nil: no time series
	cur    *interval

	counts
	iterations int64
	hist       *hdrhistogram.Histogram
	timed      int64     // samples in hist
	refused    *Recorder // the refused samples' latencies; nil: none yet
	sumNs      int64
	minNs      int64
	maxNs      int64
	failures   map[string]int64
	opFailures map[string]int64
	examples   map[string]string
}

// NewRecorder returns a Recorder that keeps whole-run figures only, with no
// time series. origin is the start of the measured phase.
func NewRecorder(origin time.Time) *Recorder {
	return newRecorder(origin, nil)
}

func newRecorder(origin time.Time, sink chan<- *interval) *Recorder {
	return &Recorder{
		origin:     origin,
		sink:       sink,
		hist:       newTotalHistogram(),
		minNs:      math.MaxInt64,
		failures:   map[string]int64{},
		opFailures: map[string]int64{},
		examples:   map[string]string{},
	}
}

// Record adds one sample: a request that started at start, completed at
// end and produced o. The sample belongs to the second in which it ended.
// A refused sample's latency goes to Refused, not to this Recorder's.
func (r *Recorder) Record(start, end time.Time, o Outcome) {
	lat := end.Sub(start)
	r.counts.add(o)
	if o.Failure != "" {
		ops, _ := o.ops()
		r.failures[o.Failure]++
		r.opFailures[o.Failure] += ops
		r.noteExample(o.Failure, o.Detail)
	}
	var iv *interval
	if r.sink != nil {
		iv = r.intervalFor(end)
		iv.counts.add(o)
	}
	if o.Refused {
		if r.refused == nil {
			r.refused = newRecorder(r.origin, nil)
		}
		r.refused.time(lat)
		return
	}
	r.time(lat)
	if iv != nil {
		iv.maxNs = max(iv.maxNs, int64(lat))
		iv.micros = append(iv.micros, ClampMicros(lat))
	}
}

// time adds lat to the latency figures.
func (r *Recorder) time(lat time.Duration) {
	recordMicros(r.hist, lat)
	ns := int64(lat)
	r.timed++
	r.sumNs += ns
	r.minNs = min(r.minNs, ns)
	r.maxNs = max(r.maxNs, ns)
}

// Refused is the latencies of the samples recorded as refused (nil if
// none was); its Timed counts them.
func (r *Recorder) Refused() *Recorder { return r.refused }

// Timed is the number of samples in the latency figures.
func (r *Recorder) Timed() int64 { return r.timed }

// NoteOpFailures adds n individually rejected ops to the breakdown under
// key, with an optional example detail. Record's Outcome.FailedOps carries
// the count; this carries the reason.
func (r *Recorder) NoteOpFailures(key string, n int64, detail string) {
	r.opFailures[key] += n
	r.noteExample(key, detail)
}

func (r *Recorder) noteExample(key, detail string) {
	if _, seen := r.examples[key]; !seen && detail != "" {
		r.examples[key] = detail
	}
}

// CountIteration counts one finished iteration; runners call it, since an
// iteration may consist of several recorded requests.
func (r *Recorder) CountIteration() { r.iterations++ }

// intervalFor returns the interval of the second containing t, handing the
// previous one to the collector when the second changed.
func (r *Recorder) intervalFor(t time.Time) *interval {
	sec := max(int(t.Sub(r.origin)/time.Second), 0)
	if r.cur != nil && r.cur.sec == sec {
		return r.cur
	}
	r.Flush()
	r.cur = &interval{sec: sec, micros: (*microsPool.Get().(*[]int64))[:0]}
	return r.cur
}

// Flush hands the current second to the collector. Workers call it when
// they stop; Record calls it whenever a new second begins.
func (r *Recorder) Flush() {
	if r.cur != nil && r.sink != nil {
		r.sink <- r.cur
	}
	r.cur = nil
}

// Merge adds o's whole-run figures to r. o must no longer be recording.
func (r *Recorder) Merge(o *Recorder) {
	r.counts.merge(o.counts)
	r.iterations += o.iterations
	r.hist.Merge(o.hist)
	r.timed += o.timed
	if o.refused != nil {
		if r.refused == nil {
			r.refused = newRecorder(r.origin, nil)
		}
		r.refused.Merge(o.refused)
	}
	r.sumNs += o.sumNs
	r.minNs = min(r.minNs, o.minNs)
	r.maxNs = max(r.maxNs, o.maxNs)
	AddCounts(r.failures, o.failures)
	AddCounts(r.opFailures, o.opFailures)
	for k, v := range o.examples {
		r.noteExample(k, v)
	}
}

func AddCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

// Requests is the number of recorded samples.
func (r *Recorder) Requests() int64 { return r.counts.Requests }

// Failed is the number of samples whose Outcome had a Failure.
func (r *Recorder) Failed() int64 { return r.counts.Failed }

// Ops is the number of units of work the samples carried.
func (r *Recorder) Ops() int64 { return r.counts.Ops }

// FailedOps is the number of those units that failed.
func (r *Recorder) FailedOps() int64 { return r.counts.FailedOps }

// Iterations is the number of iterations counted with CountIteration.
func (r *Recorder) Iterations() int64 { return r.iterations }

// Mean is the exact mean latency.
func (r *Recorder) Mean() time.Duration {
	if r.timed == 0 {
		return 0
	}
	return time.Duration(r.sumNs / r.timed)
}

// Min is the exact smallest latency (0 with no samples).
func (r *Recorder) Min() time.Duration {
	if r.timed == 0 {
		return 0
	}
	return time.Duration(r.minNs)
}

// Max is the exact largest latency.
func (r *Recorder) Max() time.Duration { return time.Duration(r.maxNs) }

// Quantile returns the latency at quantile q (0..1), to the histogram's
// precision of three significant digits.
func (r *Recorder) Quantile(q float64) time.Duration {
	return r.clamp(time.Duration(r.hist.ValueAtQuantile(q*100)) * time.Microsecond)
}

// clamp keeps a histogram value within the exact extremes: a bucket's
// upper bound can lie beyond the largest sample, and a percentile above
// the maximum would be a figure nobody measured.
func (r *Recorder) clamp(d time.Duration) time.Duration {
	if r.timed == 0 {
		return 0
	}
	return min(max(d, r.Min()), r.Max())
}

// Failures returns a copy of the failed-request counts by key.
func (r *Recorder) Failures() map[string]int64 { return copyCounts(r.failures) }

// OpFailures returns a copy of the failed-op counts by key.
func (r *Recorder) OpFailures() map[string]int64 { return copyCounts(r.opFailures) }

// Examples returns, per failure key, the first detail recorded for it.
func (r *Recorder) Examples() map[string]string {
	out := make(map[string]string, len(r.examples))
	for k, v := range r.examples {
		out[k] = v
	}
	return out
}

func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	AddCounts(out, m)
	return out
}

// Spectrum returns the latency percentile spectrum in HdrHistogram's usual
// steps (50%, 75%, 87.5%, … up to 100%), for charts and comparisons.
func (r *Recorder) Spectrum() []Quantile { return r.SpectrumTicks(1) }

// SpectrumTicks is Spectrum with ticks steps in each halving of the
// distance to 100% (wrk2's detailed spectrum has 5).
func (r *Recorder) SpectrumTicks(ticks int32) []Quantile {
	if r.timed == 0 {
		return nil
	}
	brackets := r.hist.CumulativeDistributionWithTicks(ticks)
	out := make([]Quantile, 0, len(brackets))
	for _, b := range brackets {
		ms := float64(r.clamp(time.Duration(b.ValueAt)*time.Microsecond)) / float64(time.Millisecond)
		out = append(out, Quantile{Percentile: b.Quantile, Ms: ms, Count: b.Count})
	}
	return out
}

func microsToMs(us int64) float64 { return float64(us) / 1e3 }
