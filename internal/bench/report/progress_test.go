package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "transfers")
	p.Printf("setup: %d accounts", 3)
	p.Tick(measure.Tick{
		Point:   measure.Point{Second: 1, Span: 1, Requests: 500, Ops: 500000, P50Ms: 2.5, P99Ms: 7.25},
		Elapsed: 2 * time.Second, TotalRequests: 1200, TotalFailed: 3,
	})
	// The run's last, short second: 12 requests in 20 ms are no rate.
	p.Tick(measure.Tick{
		Point:   measure.Point{Second: 2, Span: 0.02, Requests: 12, Ops: 12000, P50Ms: 2.5, P99Ms: 7.25},
		Elapsed: 2020 * time.Millisecond, TotalRequests: 1212, TotalFailed: 3,
	})
	p.Done() // nothing to end on a non-terminal
	want := "setup: 3 accounts\n" +
		"   2.0s  1,200 requests  500/s  500,000 transfers/s  p50 2.5ms  p99 7.25ms  failures 3\n" +
		"   2.0s  1,212 requests  (last 20ms: no rate)  p50 2.5ms  p99 7.25ms  failures 3\n"
	if buf.String() != want {
		t.Errorf("progress output\n%q\nwant\n%q", buf.String(), want)
	}
}
