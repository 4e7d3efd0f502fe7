package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// machineStalls are the figures of the summary tests.
func machineStalls() *measure.MachineStalls {
	return &measure.MachineStalls{Elapsed: 60, PeriodMs: 1, Samples: 55000, Stalls: 82, Stalled: 2.22, StalledShare: 0.037,
		P99Ms: 9.3, MaxMs: 73}
}

const stallsLine = "3.70% of the run stalled (82 stalls ≥ 1ms, p99 9.3ms, max 73ms)"

func TestMachineStallsInEverySummary(t *testing.T) {
	k6 := seedResult()
	kv := seedResult()
	kv.KV = &KVReport{Rate: 1000, Op: "get", SLO: "p99=1ms", Probes: []KVProbe{{Rate: 1000, Achieved: 1000, Stalls: machineStalls(),
		MachineCPU: &measure.MachineCPU{Steal: 0.14}, Why: "p99 2ms > 1ms"}}}
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
	s := measure.MachineStalls{Stalls: 1, Stalled: 0.002, StalledShare: 0.001, P99Ms: 0.05, MaxMs: 2}
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
