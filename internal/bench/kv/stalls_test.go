package kv

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

func TestJudgeProbeExplainsButNeverWaives(t *testing.T) {
	r, h := reporttest.StalledResult(1, 1000)
	r.Params.Duration = 1
	r.Latency = report.Latency{Med: 0.2, P99: 19, P999: 20, Max: 20}
	r.KV = &report.KVReport{Rate: 1000, SLOMs: map[string]float64{"p99": 19}}
	p := judgeProbe(r, []report.SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}}, h)
	if p.Pass || p.Why != "p99 19ms > 1ms" || p.Stalls != r.MachineStalls ||
		p.Machine != "machine stalled 16.00% of the probe, its own p99 19.07ms > 1ms: p99 is the machine's, not the server's" {
		t.Errorf("probe %+v", p)
	}
	want := "rate 1,000/s → 1,000/s, p50 200µs, p99 19ms, p99.9 20ms, max 20ms, 0 failed, 0 unsent, stalled 16.00%: " +
		"FAIL (p99 19ms > 1ms; machine stalled 16.00% of the probe, its own p99 19.07ms > 1ms: p99 is the machine's, not the server's)"
	if got := p.String(); got != want {
		t.Errorf("probe line\n got %s\nwant %s", got, want)
	}
}

func TestKVVerdictExplainsButNeverWaives(t *testing.T) {
	kv, h := reporttest.StalledResult(1, 1000)
	kv.Totals.Elapsed = 1
	kv.Latency.P99 = 12
	kv.KV = &report.KVReport{}
	v := kvVerdict(kv, KVConfig{Common: bench.Common{VUs: 1}, Op: KVGet}, h)
	if v.Pass || !strings.Contains(v.Detail, "p99 12ms; machine stalled 16.00% of the run, its own p99 19.07ms > 1ms: p99 is the machine's") {
		t.Errorf("kv verdict %+v", v)
	}
}
