package measure

import (
	"math"
	"testing"
	"time"
)

// within reports whether got is within rel (relative) of want.
func within(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

// recordSeries records latencies of 1ms, 2ms, … n ms, all ending at end.
func recordSeries(r *Recorder, n int, end time.Time) {
	for i := 1; i <= n; i++ {
		d := time.Duration(i) * time.Millisecond
		r.Record(end.Add(-d), end, Outcome{})
	}
}

func TestRecorderPercentilesFromKnownInputs(t *testing.T) {
	origin := time.Now()
	r := NewRecorder(origin)
	recordSeries(r, 1000, origin.Add(time.Second))

	if got := r.Requests(); got != 1000 {
		t.Fatalf("Requests = %d, want 1000", got)
	}
	// Exact figures.
	if got := r.Min(); got != time.Millisecond {
		t.Errorf("Min = %v, want 1ms", got)
	}
	if got := r.Max(); got != time.Second {
		t.Errorf("Max = %v, want 1s", got)
	}
	if got := r.Mean(); got != 500500*time.Microsecond {
		t.Errorf("Mean = %v, want 500.5ms", got)
	}
	// Percentiles: the value at rank q·n, to the histogram's 0.1%.
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 500 * time.Millisecond},
		{0.9, 900 * time.Millisecond},
		{0.95, 950 * time.Millisecond},
		{0.99, 990 * time.Millisecond},
		{1, time.Second},
	} {
		if got := r.Quantile(c.q); !within(got, c.want, 0.001) {
			t.Errorf("Quantile(%v) = %v, want %v ± 0.1%%", c.q, got, c.want)
		}
	}
	// The top bucket's bound lies above 1s; the report must not say so.
	if got := r.Quantile(1); got != time.Second {
		t.Errorf("Quantile(1) = %v, want exactly the maximum", got)
	}
}

func TestRecorderMergeEqualsOneRecorder(t *testing.T) {
	origin := time.Now()
	end := origin.Add(time.Second)
	a, b, all := NewRecorder(origin), NewRecorder(origin), NewRecorder(origin)
	for i := 1; i <= 300; i++ {
		d := time.Duration(i*i) * time.Microsecond
		o := Outcome{}
		if i%10 == 0 {
			o = Outcome{Failure: "503 overloaded", Detail: "busy"}
		}
		half := a
		if i%2 == 0 {
			half = b
		}
		half.Record(end.Add(-d), end, o)
		all.Record(end.Add(-d), end, o)
	}
	merged := NewRecorder(origin)
	merged.Merge(a)
	merged.Merge(b)
	if merged.Requests() != all.Requests() || merged.Failed() != all.Failed() || merged.Failed() != 30 {
		t.Fatalf("merged requests/failed = %d/%d, want %d/%d (30 failed)",
			merged.Requests(), merged.Failed(), all.Requests(), all.Failed())
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.9, 0.99, 1} {
		if merged.Quantile(q) != all.Quantile(q) {
			t.Errorf("Quantile(%v): merged %v, single %v", q, merged.Quantile(q), all.Quantile(q))
		}
	}
	if merged.Min() != all.Min() || merged.Max() != all.Max() || merged.Mean() != all.Mean() {
		t.Errorf("min/max/mean merged %v/%v/%v, single %v/%v/%v",
			merged.Min(), merged.Max(), merged.Mean(), all.Min(), all.Max(), all.Mean())
	}
	if got := merged.Failures()["503 overloaded"]; got != 30 {
		t.Errorf("failures[503 overloaded] = %d, want 30", got)
	}
	if got := merged.Examples()["503 overloaded"]; got != "busy" {
		t.Errorf("example = %q, want busy", got)
	}
}

func TestOutcomeOps(t *testing.T) {
	for _, c := range []struct {
		o                 Outcome
		ops, failed       int64
		requestFailedWant int64
	}{
		{Outcome{}, 1, 0, 0},
		{Outcome{Ops: 100}, 100, 0, 0},
		{Outcome{Ops: 100, FailedOps: 7}, 100, 7, 0},
		{Outcome{Ops: 100, FailedOps: 7, Failure: "error eof"}, 100, 100, 1},
		{Outcome{Ops: 5, FailedOps: 9}, 5, 5, 0},
	} {
		var n counts
		n.add(c.o)
		if n.Ops != c.ops || n.FailedOps != c.failed || n.Failed != c.requestFailedWant || n.Requests != 1 {
			t.Errorf("%+v: counts %+v, want ops %d failed ops %d failed %d", c.o, n, c.ops, c.failed, c.requestFailedWant)
		}
	}
}

func TestRecorderClampsHugeLatency(t *testing.T) {
	origin := time.Now()
	r := NewRecorder(origin)
	r.Record(origin, origin.Add(time.Millisecond), Outcome{})
	r.Record(origin, origin.Add(3*time.Hour), Outcome{})
	if r.Max() != 3*time.Hour {
		t.Errorf("Max = %v, want the exact 3h", r.Max())
	}
	if got := r.Quantile(1); !within(got, time.Hour, 0.001) {
		t.Errorf("Quantile(1) = %v, want the histogram's 1h ceiling", got)
	}
	if got := r.Quantile(0); got != time.Millisecond {
		t.Errorf("Quantile(0) = %v, want the exact minimum 1ms, not its bucket's bound", got)
	}
}

// TestCollectorSeries feeds a Collector by hand, without its goroutine, so
// that which seconds are closed when is under the test's control.
func TestCollectorSeries(t *testing.T) {
	origin := time.Now()
	var ticks []Tick
	c := NewCollector(origin, 2, func(tk Tick) { ticks = append(ticks, tk) })
	r1, r2 := c.NewRecorder(), c.NewRecorder()
	at := func(sec float64) time.Time { return origin.Add(time.Duration(sec * float64(time.Second))) }

	// Second 0: r1 has 10 requests of 1 ms, r2 10 of 3 ms (one failed).
	for i := range 10 {
		r1.Record(at(0.5).Add(-time.Millisecond), at(0.5), Outcome{})
		o := Outcome{}
		if i == 0 {
			o.Failure = "422 insufficient_funds"
		}
		r2.Record(at(0.6).Add(-3*time.Millisecond), at(0.6), o)
	}
	// Second 1: r1 only; recording it hands r1's second 0 over.
	r1.Record(at(1.2).Add(-2*time.Millisecond), at(1.2), Outcome{Ops: 5, FailedOps: 2})
	drain(c)
	c.closeBefore(1, 1) // second 0 closes while r2 still holds its part
	r2.Flush()          // … which therefore arrives late
	r1.Flush()
	drain(c)
	c.finish(at(1.5))

	if len(c.points) != 2 {
		t.Fatalf("%d points, want 2: %+v", len(c.points), c.points)
	}
	p0, p1 := c.points[0], c.points[1]
	if p0.Requests != 20 || p0.Failed != 1 || p0.Late != 10 {
		t.Errorf("second 0: requests %d failed %d late %d, want 20, 1, 10", p0.Requests, p0.Failed, p0.Late)
	}
	if !approx(p0.P50Ms, 1, 0.01) || p0.Span != 1 {
		t.Errorf("second 0: p50 %v span %v, want 1 ms (from the on-time part) and 1 s", p0.P50Ms, p0.Span)
	}
	if p1.Requests != 1 || p1.Ops != 5 || p1.FailedOps != 2 || p1.Span != 0.5 || !approx(p1.P99Ms, 2, 0.01) {
		t.Errorf("second 1: %+v, want 1 request, 5 ops, 2 failed ops, span 0.5, p99 2 ms", p1)
	}
	if got := p1.Rate(); got != 2 {
		t.Errorf("second 1 rate = %v, want 2/s over its half second", got)
	}
	if len(ticks) != 2 || ticks[0].TotalRequests != 10 || ticks[1].TotalRequests != 21 {
		t.Errorf("ticks %+v, want two, with running totals 10 then 21", ticks)
	}
}

// approx reports whether got is within rel (relative) of want; the
// per-second histograms keep two significant digits.
func approx(got, want, rel float64) bool { return math.Abs(got-want) <= rel*want }

// drain hands everything queued to the collector, as its goroutine would.
func drain(c *Collector) {
	for {
		select {
		case iv := <-c.in:
			c.add(iv)
		default:
			return
		}
	}
}

// TestRefusedTimedApart: refused samples count as requests and failures
// but their latencies go to Refused, not to the latency figures.
func TestRefusedTimedApart(t *testing.T) {
	origin := time.Now()
	r := NewRecorder(origin)
	r.Record(origin, origin.Add(10*time.Millisecond), Outcome{})
	r.Record(origin, origin.Add(20*time.Millisecond), Outcome{})
	r.Record(origin, origin.Add(time.Millisecond), Outcome{Failure: "503 overloaded", Refused: true})
	other := NewRecorder(origin)
	other.Record(origin, origin.Add(2*time.Millisecond), Outcome{Failure: "503 overloaded", Refused: true})
	r.Merge(other)
	if r.Requests() != 4 || r.Failed() != 2 || r.Timed() != 2 {
		t.Fatalf("requests %d, failed %d, timed %d; want 4, 2, 2", r.Requests(), r.Failed(), r.Timed())
	}
	if r.Min() != 10*time.Millisecond || r.Mean() != 15*time.Millisecond {
		t.Fatalf("accepted min %v mean %v, want 10ms 15ms", r.Min(), r.Mean())
	}
	refused := r.Refused()
	if refused == nil || refused.Timed() != 2 || refused.Max() != 2*time.Millisecond {
		t.Fatalf("refused: %+v, want 2 samples up to 2ms", refused)
	}
}

// TestCollectorMergesASecondsWorkers: the latencies two workers hand over
// for the same second make that second's percentiles together, each
// sample once, and the points' requests add up to the run's.
func TestCollectorMergesASecondsWorkers(t *testing.T) {
	origin := time.Now()
	c := NewCollector(origin, 2, nil)
	r1, r2 := c.NewRecorder(), c.NewRecorder()
	at := func(sec float64) time.Time { return origin.Add(time.Duration(sec * float64(time.Second))) }
	for range 50 {
		r1.Record(at(0.999).Add(-time.Millisecond), at(0.999), Outcome{})
		r2.Record(at(0.3).Add(-5*time.Millisecond), at(0.3), Outcome{})
	}
	r1.Record(at(1).Add(-9*time.Millisecond), at(1), Outcome{}) // second 1's first instant
	r1.Flush()
	r2.Flush()
	drain(c)
	c.finish(at(1.5))
	if len(c.points) != 2 {
		t.Fatalf("%d points, want 2: %+v", len(c.points), c.points)
	}
	p0, p1 := c.points[0], c.points[1]
	if p0.Requests != 100 || p1.Requests != 1 || p0.Late != 0 {
		t.Errorf("requests %d then %d (late %d), want 100 then 1, none late", p0.Requests, p1.Requests, p0.Late)
	}
	if !approx(p0.P50Ms, 1, 0.01) || !approx(p0.P99Ms, 5, 0.01) || !approx(p1.P50Ms, 9, 0.01) {
		t.Errorf("p50 %v p99 %v then p50 %v, want 1, 5 then 9 ms", p0.P50Ms, p0.P99Ms, p1.P50Ms)
	}
}
