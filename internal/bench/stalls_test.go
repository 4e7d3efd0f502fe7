package bench

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// syntheticStalls is a tally of a one-second phase of a 1 ms meter: 990
// sleeps 50 µs late, as waking a thread costs, and ten stalls of 20 ms.
func syntheticStalls() *stallTally {
	tally := newStallTally(time.Millisecond)
	for i := range 1000 {
		if i%100 == 99 {
			tally.record(20 * time.Millisecond)
		} else {
			tally.record(50 * time.Microsecond)
		}
	}
	return tally
}

func TestStallTally(t *testing.T) {
	s, _ := syntheticStalls().report(1250 * time.Millisecond)
	if s.Samples != 1000 || s.Stalls != 10 || s.Stalled != 0.2 || s.StalledShare != 0.16 || s.MaxMs != 20 ||
		s.PeriodMs != 1 || s.Elapsed != 1.25 {
		t.Errorf("report = %+v", s)
	}
	// Counting moments: each 20 ms stall adds one sample for each period
	// it swallowed (19 ms, 18 ms, ... 1 ms), so 20 of 1,190 samples are at
	// least 19 ms and the 99th percentile is 19 ms, to the histogram's 1%.
	if math.Abs(s.P99Ms-19) > 0.19 {
		t.Errorf("p99 = %v ms, want 19 ms", s.P99Ms)
	}
}

func TestStallTallyThreshold(t *testing.T) {
	tally := newStallTally(time.Millisecond)
	for _, d := range []time.Duration{-time.Microsecond, StallMin - time.Microsecond, StallMin, 3 * StallMin} {
		tally.record(d)
	}
	s, _ := tally.report(time.Second)
	if s.Samples != 4 || s.Stalls != 2 || s.Stalled.Duration() != 4*StallMin || s.MaxMs != 3 {
		t.Errorf("report = %+v: want the overruns of 1 ms and more counted as 2 stalls of 4 ms", s)
	}
}

// stalledResult is a result whose machine stalled as syntheticStalls,
// and the stalls' distributions.
func stalledResult(vus int, requests int64) (*Result, *stallHistograms) {
	stalls, hists := syntheticStalls().report(1250 * time.Millisecond)
	return &Result{Totals: Totals{VUs: vus, Requests: requests}, MachineStalls: stalls}, hists
}

func TestStallNoteOpenModel(t *testing.T) {
	r, h := stalledResult(1, 1000)
	r.KV = &KVReport{}
	note := h.note(r, "probe", []SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}})
	want := "machine stalled 16.00% of the probe, its own p99 19.07ms > 1ms: p99 is the machine's, not the server's"
	if note != want {
		t.Errorf("note = %q, want %q", note, want)
	}
	// The machine alone keeps 1% of moments 19 ms late, but not 1% of
	// them beyond 25 ms, nor half of them beyond 1 ms.
	for _, term := range []SLOTerm{{Name: "p99", Quantile: 0.99, Max: 25 * time.Millisecond}, {Name: "p50", Quantile: 0.5, Max: time.Millisecond}} {
		if note := h.note(r, "probe", []SLOTerm{term}); note != "" {
			t.Errorf("%+v explained by stalls that cannot break it: %q", term, note)
		}
	}
	two := h.note(r, "probe", []SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}, {Name: "p99.5", Quantile: 0.995, Max: 5 * time.Millisecond}})
	if !strings.HasSuffix(two, ": p99 and p99.5 are the machine's, not the server's") {
		t.Errorf("two terms: %q", two)
	}
}

func TestStallNoteClosedModel(t *testing.T) {
	p95 := SLOTerm{Name: "p95", Quantile: 0.95, Max: 10 * time.Millisecond}
	// Ten 20 ms stalls, each delaying up to 100 requests in flight: 1,000
	// requests, 10% of 10,000 but 1% of 100,000.
	r, h := stalledResult(100, 10_000)
	if note := h.note(r, "run", []SLOTerm{p95}); !strings.Contains(note,
		"10 stalls > 10ms each delaying up to 100 requests in flight: p95 is the machine's") {
		t.Errorf("10%% of requests delayed: note %q", note)
	}
	r.Totals.Requests = 100_000
	if note := h.note(r, "run", []SLOTerm{p95}); note != "" {
		t.Errorf("1%% of requests delayed explained a p95: %q", note)
	}
	r.Totals.Requests = 100
	if note := h.note(r, "run", []SLOTerm{{Name: "p99", Quantile: 0.99, Max: 30 * time.Millisecond}}); note != "" {
		t.Errorf("no stall beyond the bound explained it: %q", note)
	}
}

func TestVerdictNoteOnlyForAMissMeasured(t *testing.T) {
	r, h := stalledResult(1, 1000)
	r.KV = &KVReport{}
	p99 := SLOTerm{Name: "p99", Quantile: 0.99, Max: time.Millisecond}
	if note := h.verdictNote(r, p99, 0.9); note != "" {
		t.Errorf("a met bound got a note: %q", note)
	}
	if note := h.verdictNote(r, p99, 12); !strings.HasPrefix(note, "; machine stalled 16.00% of the run") {
		t.Errorf("a missed bound the machine explains: %q", note)
	}
	var none *stallHistograms
	if note := none.verdictNote(r, p99, 12); note != "" {
		t.Errorf("a run without a meter explained a miss: %q", note)
	}
}

func TestVerdictsExplainButNeverWaive(t *testing.T) {
	kv, h := stalledResult(1, 1000)
	kv.Totals.Elapsed = 1
	kv.Latency.P99 = 12
	kv.KV = &KVReport{}
	v := kvVerdict(kv, KVConfig{Common: Common{VUs: 1}, Op: KVGet}, h)
	if v.Pass || !strings.Contains(v.Detail, "p99 12ms; machine stalled 16.00% of the run, its own p99 19.07ms > 1ms: p99 is the machine's") {
		t.Errorf("kv verdict %+v", v)
	}
	tr, h := stalledResult(100, 10_000)
	tr.Totals.Elapsed = 1
	tr.Latency.P95 = 25
	v = transferVerdict(tr, 0, h)
	if v.Pass || !strings.Contains(v.Detail, "p95 25ms; machine stalled 16.00% of the run, 10 stalls > 10ms") {
		t.Errorf("transfer verdict %+v", v)
	}
}

func TestJudgeProbeExplainsButNeverWaives(t *testing.T) {
	r, h := stalledResult(1, 1000)
	r.Params.Duration = 1
	r.Latency = Latency{Med: 0.2, P99: 19, P999: 20, Max: 20}
	r.KV = &KVReport{Rate: 1000, SLOMs: map[string]float64{"p99": 19}}
	p := judgeProbe(r, []SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}}, h)
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

func TestStallMeterLifecycle(t *testing.T) {
	m := startStallMeter()
	s, h := m.stop()
	if s == nil || h == nil || s.Elapsed <= 0 || s.Samples < 1 || s.PeriodMs != 1 || h.overruns.TotalCount() != s.Samples {
		t.Fatalf("report %+v: want a positive phase and at least one sample", s)
	}
	select {
	case <-m.done:
	default:
		t.Error("stop returned before the meter's goroutine ended")
	}
	var never *stallMeter
	if s, h := never.stop(); s != nil || h != nil {
		t.Error("a meter never started reported stalls")
	}
}

func TestRunsCarryTheirStalls(t *testing.T) {
	noop := func(context.Context, *VU) (Iteration, error) { return func(context.Context, *VU) {}, nil }
	run, err := Closed{VUs: 2, Iterations: 10}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls == nil || run.Stalls.Samples < 1 || run.stallHists == nil {
		t.Errorf("closed run stalls %+v, want the meter's report", run.Stalls)
	}
	if res := NewResult("transfer", Params{}, run, nil); res.MachineStalls != run.Stalls {
		t.Error("NewResult dropped the run's stalls")
	}
	open := Open{Senders: 1, Rate: 1000, Duration: 20 * time.Millisecond}
	orun, err := open.Run(context.Background(), func(context.Context, *VU) (Request, error) {
		return func(context.Context, *VU) Outcome { return Outcome{} }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if orun.Stalls == nil || orun.Stalls.Samples < 1 || orun.stallHists == nil {
		t.Errorf("open run stalls %+v, want the meter's report", orun.Stalls)
	}
	// With the meter off, neither model reports stalls.
	run, err = Closed{VUs: 2, Iterations: 10, NoStallMeter: true}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls != nil || run.stallHists != nil {
		t.Errorf("closed run with the meter off reported stalls %+v", run.Stalls)
	}
	open.NoStallMeter = true
	if orun, err = open.Run(context.Background(), func(context.Context, *VU) (Request, error) {
		return func(context.Context, *VU) Outcome { return Outcome{} }, nil
	}); err != nil {
		t.Fatal(err)
	}
	if orun.Stalls != nil || orun.stallHists != nil {
		t.Errorf("open run with the meter off reported stalls %+v", orun.Stalls)
	}
	// Interrupted in the warm-up, the measured phase never began.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, err = Closed{VUs: 1, Duration: time.Hour, Warmup: time.Hour}.Run(ctx, noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls != nil {
		t.Errorf("a run interrupted in its warm-up reported stalls %+v", run.Stalls)
	}
}

// machineStalls are the figures of the summary tests.
func machineStalls() *MachineStalls {
	return &MachineStalls{Elapsed: 60, PeriodMs: 1, Samples: 55000, Stalls: 82, Stalled: 2.22, StalledShare: 0.037,
		P99Ms: 9.3, MaxMs: 73}
}

const stallsLine = "3.70% of the run stalled (82 stalls ≥ 1ms, p99 9.3ms, max 73ms)"

func TestMachineStallsInEverySummary(t *testing.T) {
	k6 := seedResult()
	kv := seedResult()
	kv.KV = &KVReport{Rate: 1000, Op: KVGet, SLO: "p99=1ms", Probes: []KVProbe{{Rate: 1000, Achieved: 1000, Stalls: machineStalls(),
		MachineCPU: &MachineCPU{Steal: 0.14}, Why: "p99 2ms > 1ms"}}}
	ghz := seedResult()
	ghz.Scenario = "wallet"
	for _, c := range []struct {
		name string
		r    *Result
		want []string
	}{
		{"k6", k6, []string{"     load_generator_cpu.............: 20.0% of one core",
			"\n     machine_stalls.................: " + stallsLine + "\n"}},
		{"wrk2", kv, []string{"\n     machine_stalls.................: " + stallsLine + "\n",
			", 0 unsent, stalled 3.70%, steal 14%: FAIL (p99 2ms > 1ms)\n"}},
		{"ghz", ghz, []string{"\nMachine stalls during the run: " + stallsLine + "\n"}},
	} {
		var buf bytes.Buffer
		if err := WriteSummary(&buf, c.r); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.want {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s summary lacks %q:\n%s", c.name, want, buf.String())
			}
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, kv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| machine stalls | " + stallsLine + " |", "| machine stalled | CPU steal |",
		"| 0 | 0 | 3.70% | 14% | MISS | p99 2ms > 1ms |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestOneStall(t *testing.T) {
	s := MachineStalls{Stalls: 1, Stalled: 0.002, StalledShare: 0.001, P99Ms: 0.05, MaxMs: 2}
	if got, want := s.String(), "0.10% of the run stalled (1 stall ≥ 1ms, p99 50µs, max 2ms)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestSummaryWithoutStalls(t *testing.T) {
	r := seedResult()
	r.MachineStalls = nil
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "machine_stalls") {
		t.Errorf("a result without stalls has a machine_stalls line:\n%s", buf.String())
	}
}

func TestCompareStalls(t *testing.T) {
	a, b := seedResult(), seedResult()
	b.MachineStalls.StalledShare = 0.074
	var buf bytes.Buffer
	if err := Compare(&buf, "a", a, "b", b); err != nil {
		t.Fatal(err)
	}
	// The machine's stalls are context, not surge's doing: neither
	// better nor worse.
	want := []string{"machine", "stalled", "%", "3.70", "7.40", "+100.0%"}
	for line := range strings.Lines(buf.String()) {
		if slices.Equal(strings.Fields(line), want) {
			return
		}
	}
	t.Errorf("comparison lacks the line %q:\n%s", want, buf.String())
}
