package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

func TestStallNoteOpenModel(t *testing.T) {
	r, h := reporttest.StalledResult(1, 1000)
	r.KV = &report.KVReport{}
	note := report.StallNote(h, r, "probe", []report.SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}})
	want := "machine stalled 16.00% of the probe, its own p99 19.07ms > 1ms: p99 is the machine's, not the server's"
	if note != want {
		t.Errorf("note = %q, want %q", note, want)
	}
	// The machine alone keeps 1% of moments 19 ms late, but not 1% of
	// them beyond 25 ms, nor half of them beyond 1 ms.
	for _, term := range []report.SLOTerm{{Name: "p99", Quantile: 0.99, Max: 25 * time.Millisecond}, {Name: "p50", Quantile: 0.5, Max: time.Millisecond}} {
		if note := report.StallNote(h, r, "probe", []report.SLOTerm{term}); note != "" {
			t.Errorf("%+v explained by stalls that cannot break it: %q", term, note)
		}
	}
	two := report.StallNote(h, r, "probe", []report.SLOTerm{{Name: "p99", Quantile: 0.99, Max: time.Millisecond}, {Name: "p99.5", Quantile: 0.995, Max: 5 * time.Millisecond}})
	if !strings.HasSuffix(two, ": p99 and p99.5 are the machine's, not the server's") {
		t.Errorf("two terms: %q", two)
	}
}

func TestStallNoteClosedModel(t *testing.T) {
	p95 := report.SLOTerm{Name: "p95", Quantile: 0.95, Max: 10 * time.Millisecond}
	// Ten 20 ms stalls, each delaying up to 100 requests in flight: 1,000
	// requests, 10% of 10,000 but 1% of 100,000.
	r, h := reporttest.StalledResult(100, 10_000)
	if note := report.StallNote(h, r, "run", []report.SLOTerm{p95}); !strings.Contains(note,
		"10 stalls > 10ms each delaying up to 100 requests in flight: p95 is the machine's") {
		t.Errorf("10%% of requests delayed: note %q", note)
	}
	r.Totals.Requests = 100_000
	if note := report.StallNote(h, r, "run", []report.SLOTerm{p95}); note != "" {
		t.Errorf("1%% of requests delayed explained a p95: %q", note)
	}
	r.Totals.Requests = 100
	if note := report.StallNote(h, r, "run", []report.SLOTerm{{Name: "p99", Quantile: 0.99, Max: 30 * time.Millisecond}}); note != "" {
		t.Errorf("no stall beyond the bound explained it: %q", note)
	}
}

func TestVerdictNoteOnlyForAMissMeasured(t *testing.T) {
	r, h := reporttest.StalledResult(1, 1000)
	r.KV = &report.KVReport{}
	p99 := report.SLOTerm{Name: "p99", Quantile: 0.99, Max: time.Millisecond}
	if note := report.StallVerdictNote(h, r, p99, 0.9); note != "" {
		t.Errorf("a met bound got a note: %q", note)
	}
	if note := report.StallVerdictNote(h, r, p99, 12); !strings.HasPrefix(note, "; machine stalled 16.00% of the run") {
		t.Errorf("a missed bound the machine explains: %q", note)
	}
	var none *measure.StallHistograms
	if note := report.StallVerdictNote(none, r, p99, 12); note != "" {
		t.Errorf("a run without a meter explained a miss: %q", note)
	}
}

func TestResultCarriesTheRunsStalls(t *testing.T) {
	noop := func(context.Context, *load.VU) (load.Iteration, error) {
		return func(context.Context, *load.VU) {}, nil
	}
	run, err := load.Closed{VUs: 2, Iterations: 10}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	if res := report.NewResult("transfer", report.Params{}, run, nil); res.MachineStalls == nil || res.MachineStalls != run.Stalls {
		t.Error("NewResult dropped the run's stalls")
	}
}

func TestShortRunsAreFlagged(t *testing.T) {
	noop := func(context.Context, *load.VU) (load.Iteration, error) {
		return func(context.Context, *load.VU) {}, nil
	}
	run, err := load.Closed{VUs: 2, Iterations: 10, NoStallMeter: true}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	short := report.NewResult("wallet", report.Params{}, run, nil)
	if len(short.Warnings) != 1 || !strings.Contains(short.Warnings[0], "shorter than 2s") {
		t.Fatalf("warnings %q, want the short run flagged", short.Warnings)
	}
	for _, r := range []*report.Result{short, withScenario(short, "transfer"), withKV(short)} {
		var b bytes.Buffer
		if err := report.WriteSummary(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nwarning: the measured run lasted") {
			t.Errorf("%s summary lacks the warning:\n%s", r.Scenario, b.String())
		}
	}
	run.Elapsed = report.MinStableRun
	if long := report.NewResult("wallet", report.Params{}, run, nil); len(long.Warnings) != 0 {
		t.Errorf("a run of %s flagged: %q", report.MinStableRun, long.Warnings)
	}
}

func withScenario(r *report.Result, s string) *report.Result {
	c := *r
	c.Scenario = s
	return &c
}

func withKV(r *report.Result) *report.Result {
	c := *withScenario(r, "kv")
	c.KV = &report.KVReport{}
	return &c
}
