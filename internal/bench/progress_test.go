package bench

import (
	"bytes"
	"testing"
	"time"
)

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "transfers")
	p.Printf("setup: %d accounts", 3)
	p.Tick(Tick{
		Point:   Point{Second: 1, Span: 1, Requests: 500, Ops: 500000, P50Ms: 2.5, P99Ms: 7.25},
		Elapsed: 2 * time.Second, TotalRequests: 1200, TotalFailed: 3,
	})
	p.Done() // nothing to end on a non-terminal
	want := "setup: 3 accounts\n" +
		"   2.0s  1,200 requests  500/s  500,000 transfers/s  p50 2.5ms  p99 7.25ms  failures 3\n"
	if buf.String() != want {
		t.Errorf("progress output\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestDecimalCounter(t *testing.T) {
	d := decimal("0")
	for range 1000 {
		d.inc()
	}
	if string(d) != "1000" {
		t.Errorf("after 1000 increments: %q", d)
	}
	d = decimal("99")
	d.inc()
	if string(d) != "100" {
		t.Errorf("99+1 = %q", d)
	}
}

func TestScanStatuses(t *testing.T) {
	for reply, want := range map[string][2]int{
		`{"results":[{"id":"a:1","status":201},{"id":"b","status":200}]}`:          {2, 0},
		`{"results":[{"id":"a","status":201},{"id":"b","status":422,"code":"x"}]}`: {2, 1},
		`{"results":[{"id":"a","status": 201}]}`:                                   {1, 1}, // unusual spacing: decoded in full instead
		`{"detail":"a \"status\":201 inside a string"}`:                            {0, 0},
		`{"results":[]}`: {0, 0},
	} {
		n, bad := scanStatuses([]byte(reply))
		if [2]int{n, bad} != want {
			t.Errorf("scanStatuses(%s) = %d, %d; want %v", reply, n, bad, want)
		}
	}
}
