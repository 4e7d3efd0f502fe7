package report

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestParseSLO(t *testing.T) {
	terms, err := ParseSLO("p99=1ms, p99.9=5ms")
	if err != nil || len(terms) != 2 || terms[0].Quantile != 0.99 || terms[1].Max != 5*time.Millisecond || terms[1].Name != "p99.9" {
		t.Fatalf("ParseSLO = %+v, %v", terms, err)
	}
	for _, bad := range []string{"", "p99", "99=1ms", "p0=1ms", "p101=1ms", "p99=fast", "p99=-1ms", "p99=1ms,"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q) accepted", bad)
		}
	}
}

func TestWrkFormats(t *testing.T) {
	cases := map[string]string{
		wrkTime(0.649): "649.00us", wrkTime(0.94): "0.94ms", wrkTime(13.22): "13.22ms", wrkTime(1490): "1.49s",
		wrkCount(11830): "11.83k", wrkCount(695.74): "695.74", wrkBytes(43.13 * 1024 * 1024): "43.13MB",
		wrkDuration(60): "1.00m", wrkDuration(3): "3.00s",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestProbeLineShowsSteal(t *testing.T) {
	p := KVProbe{Rate: 1000, Achieved: 1000, P50Ms: 0.2, P99Ms: 38.5, P999Ms: 50, MaxMs: 57, Why: "p99 38.5ms > 1ms",
		MachineCPU: &measure.MachineCPU{Steal: 0.21}}
	want := "rate 1,000/s → 1,000/s, p50 200µs, p99 38.5ms, p99.9 50ms, max 57ms, 0 failed, 0 unsent, steal 21%: FAIL (p99 38.5ms > 1ms)"
	if got := p.String(); got != want {
		t.Errorf("probe line\n got %q\nwant %q", got, want)
	}
	p.MachineCPU = nil
	if got := p.String(); strings.Contains(got, "steal") {
		t.Errorf("probe line without a machine reading mentions steal: %q", got)
	}
}
