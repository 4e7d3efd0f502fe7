package measure

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Point is one second of a run's time series.
type Point struct {
	// Second counts whole seconds since the start of the measured phase.
	Second int `json:"t"`
	// Span is the length of the second in seconds: 1, except for the
	// partial last second of a run.
	Span      float64 `json:"span_s"`
	Requests  int64   `json:"requests"`
	Failed    int64   `json:"failed"`
	Ops       int64   `json:"ops"`
	FailedOps int64   `json:"failed_ops"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	// Late counts requests of this second that reached the collector after
	// the second was closed (a worker stuck in a slow request holds its
	// earlier samples); they are in the counts but not the percentiles.
	Late int64 `json:"late,omitempty"`
}

// Rate is the point's requests per second.
func (p Point) Rate() float64 { return PerSecond(p.Requests, p.Span) }

// OpsRate is the point's ops per second.
func (p Point) OpsRate() float64 { return PerSecond(p.Ops, p.Span) }

func PerSecond(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// Tick reports a closed second to a progress display.
type Tick struct {
	Point
	// Elapsed is the end of the second, measured from the start.
	Elapsed time.Duration
	// Totals through this second.
	TotalRequests, TotalFailed, TotalOps int64
}

// collectGrace is how long after a second ends the Collector waits for
// workers to hand it over before closing it: a worker learns that a second
// ended only when its next request completes, typically microseconds to a
// few milliseconds later.
const collectGrace = 250 * time.Millisecond

// Collector merges the seconds that Recorders hand over into a time series
// and reports each second once it is closed. Start it, give each worker a
// Recorder from NewRecorder, and call Stop after every worker has flushed.
type Collector struct {
	origin time.Time
	onTick func(Tick)
	in     chan *interval
	done   chan struct{}
	stopAt chan time.Time

	open   map[int]*interval // merged per second, not yet closed
	closed int               // seconds below this are closed
	points []Point
	total  counts
}

// NewCollector returns a Collector for a run whose measured phase starts at
// origin. onTick, if not nil, is called from the Collector's goroutine for
// every second as it closes. workers sizes the hand-over queue.
func NewCollector(origin time.Time, workers int, onTick func(Tick)) *Collector {
	return &Collector{
		origin: origin,
		onTick: onTick,
		in:     make(chan *interval, 4*max(workers, 1)),
		done:   make(chan struct{}),
		stopAt: make(chan time.Time, 1),
		open:   map[int]*interval{},
	}
}

// NewRecorder returns a Recorder that hands its seconds to c.
func (c *Collector) NewRecorder() *Recorder { return newRecorder(c.origin, c.in) }

// Start runs the collecting goroutine.
func (c *Collector) Start() { go c.loop() }

// Stop closes every remaining second, the last one ending at end, and
// returns the series. Every Recorder must have been flushed before.
func (c *Collector) Stop(end time.Time) []Point {
	c.stopAt <- end
	close(c.in)
	<-c.done
	return c.points
}

func (c *Collector) loop() {
	defer close(c.done)
	timer := time.NewTimer(time.Until(c.closeTime(1)))
	defer timer.Stop()
	for {
		select {
		case iv, ok := <-c.in:
			if !ok {
				c.finish(<-c.stopAt)
				return
			}
			c.add(iv)
		case now := <-timer.C:
			// Close every second that ended at least collectGrace ago;
			// computing it from the clock copes with a late timer.
			upTo := int(now.Sub(c.origin.Add(collectGrace)) / time.Second)
			c.closeBefore(upTo, 1)
			timer.Reset(time.Until(c.closeTime(c.closed + 1)))
		}
	}
}

// closeTime is when the seconds before sec may be closed.
func (c *Collector) closeTime(sec int) time.Time {
	return c.origin.Add(time.Duration(sec)*time.Second + collectGrace)
}

func (c *Collector) add(iv *interval) {
	if iv.sec < c.closed {
		c.addLate(iv)
		return
	}
	agg := c.open[iv.sec]
	if agg == nil {
		agg = &interval{sec: iv.sec, hist: intervalPool.Get().(*hdrhistogram.Histogram)}
		c.open[iv.sec] = agg
	}
	agg.counts.merge(iv.counts)
	agg.maxNs = max(agg.maxNs, iv.maxNs)
	for _, us := range iv.micros {
		_ = agg.hist.RecordValue(us) // in range: ClampMicros
	}
	recycleMicros(iv)
}

// addLate folds a second that was already closed into its point: the
// counts stay exact, the percentiles keep what was known at closing.
func (c *Collector) addLate(iv *interval) {
	p := &c.points[iv.sec]
	p.Requests += iv.Requests
	p.Failed += iv.Failed
	p.Ops += iv.Ops
	p.FailedOps += iv.FailedOps
	p.Late += iv.Requests
	p.MaxMs = max(p.MaxMs, nsToMs(iv.maxNs))
	c.total.merge(iv.counts)
	recycleMicros(iv)
}

// closeBefore closes the seconds below upTo; the last one spans lastSpan
// seconds.
func (c *Collector) closeBefore(upTo int, lastSpan float64) {
	for ; c.closed < upTo; c.closed++ {
		span := 1.0
		if c.closed == upTo-1 {
			span = lastSpan
		}
		c.closeSecond(c.closed, span)
	}
}

func (c *Collector) closeSecond(sec int, span float64) {
	p := Point{Second: sec, Span: span}
	if agg := c.open[sec]; agg != nil {
		delete(c.open, sec)
		p.Requests, p.Failed, p.Ops, p.FailedOps = agg.Requests, agg.Failed, agg.Ops, agg.FailedOps
		p.MaxMs = nsToMs(agg.maxNs)
		// Bucket bounds can exceed the exact maximum; see Recorder.clamp.
		p.P50Ms = min(microsToMs(agg.hist.ValueAtQuantile(50)), p.MaxMs)
		p.P99Ms = min(microsToMs(agg.hist.ValueAtQuantile(99)), p.MaxMs)
		c.total.merge(agg.counts)
		recycle(agg.hist)
	}
	c.points = append(c.points, p)
	if c.onTick != nil {
		c.onTick(Tick{
			Point:         p,
			Elapsed:       time.Duration((float64(sec) + span) * float64(time.Second)),
			TotalRequests: c.total.Requests,
			TotalFailed:   c.total.Failed,
			TotalOps:      c.total.Ops,
		})
	}
}

// finish closes everything up to end; the last second may be partial.
func (c *Collector) finish(end time.Time) {
	elapsed := end.Sub(c.origin)
	last := int(elapsed / time.Second)
	frac := (elapsed - time.Duration(last)*time.Second).Seconds()
	if frac > 0 {
		c.closeBefore(last+1, frac)
	} else {
		c.closeBefore(last, 1)
	}
	// Samples that completed after end (none in a well-behaved run) still
	// belong in the series.
	for c.closed <= c.maxOpen() {
		c.closeSecond(c.closed, 1)
		c.closed++
	}
}

func (c *Collector) maxOpen() int {
	m := -1
	for sec := range c.open {
		m = max(m, sec)
	}
	return m
}

func recycle(h *hdrhistogram.Histogram) {
	h.Reset()
	intervalPool.Put(h)
}

// recycleMicros gives back the slice a VU handed iv's latencies in.
func recycleMicros(iv *interval) {
	s := iv.micros[:0]
	iv.micros = nil
	microsPool.Put(&s)
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }
