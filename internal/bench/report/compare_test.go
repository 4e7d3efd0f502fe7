package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCompareFigureByFigure(t *testing.T) {
	a := seedResult()
	b := seedResult()
	b.Params.VUs = 50
	b.Params.Extra["batch"] = "10"
	b.Totals.RequestsPerS = a.Totals.RequestsPerS * 2
	b.Latency.P95 = 47.085 // half
	b.Latency.Max = 2080   // double
	b.Verdict = &Verdict{Pass: true}
	var out bytes.Buffer
	if err := Compare(&out, "a.json", a, "b.json", b); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, re := range []string{
		`(?m)^parameter vus: 100 → 50$`,
		`(?m)^parameter batch: 0 → 10$`,
		`(?m)^requests/s +1,446 +2,893 +\+100\.0% +better$`,
		`(?m)^latency p95 ms +94\.17 +47\.09 +-50\.0% +better$`,
		`(?m)^latency max ms +1,040 +2,080 +\+100\.0% +worse$`,
		`(?m)^requests +86,776 +86,776 +0%$`,
		`(?m)^verdict: MISS → PASS$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("output does not match %s:\n%s", re, got)
		}
	}
	if strings.Contains(got, "ops/s") {
		t.Errorf("ops/s shown for runs without ops:\n%s", got)
	}
	if strings.Contains(got, "warning") || strings.Contains(got, "machine:") {
		t.Errorf("same scenario and machine flagged:\n%s", got)
	}
}

func TestCompareWarnsOfOtherScenarioAndMachine(t *testing.T) {
	a, b := seedResult(), seedResult()
	b.Scenario = "spike"
	b.Machine.CPUs = 8
	b.Totals.OpsName = "transfers"
	var out bytes.Buffer
	if err := Compare(&out, "a", a, "b", b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"warning: different scenarios (transfer, spike)", "machine: linux/amd64, 2 CPUs", "→ linux/amd64, 8 CPUs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !regexp.MustCompile(`(?m)^ops/s +— +1,446$`).MatchString(out.String()) {
		t.Errorf("ops/s of one side only:\n%s", out.String())
	}
}

func TestReadResultFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := WriteFile(good, seedResult()); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadResultFile(good); err != nil || r.Scenario != "transfer" {
		t.Fatalf("ReadResultFile: %v, %v", r, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version": 1, "totals": "nope"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := ReadResultFile(p); err == nil {
			t.Errorf("ReadResultFile(%s) accepted it", p)
		}
	}
}

// TestReadResultFileExplainsReports: given the Markdown report of a run,
// compare says what it reads instead of failing to parse it as JSON.
func TestReadResultFileExplainsReports(t *testing.T) {
	md := filepath.Join(t.TempDir(), "run.md")
	if err := WriteFile(md, seedResult()); err != nil {
		t.Fatal(err)
	}
	_, err := ReadResultFile(md)
	if err == nil || !strings.Contains(err.Error(), "compare reads the .json result of a run") || strings.Contains(err.Error(), "invalid character") {
		t.Errorf("ReadResultFile(.md) = %v", err)
	}
}

func TestCompareWithoutSpikes(t *testing.T) {
	if strings.Contains(seedCompare(t), "spike:") {
		t.Error("spike figures shown for runs without a spike")
	}
}

// seedCompare compares the seed result with itself.
func seedCompare(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	if err := Compare(&out, "a", seedResult(), "b", seedResult()); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
