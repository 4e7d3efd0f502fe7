package report

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

func TestK6Duration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		69031 * time.Microsecond:       "69.03ms",
		1044 * time.Millisecond:        "1.04s",
		5200 * time.Nanosecond:         "5.2µs",
		970 * time.Nanosecond:          "970ns",
		0:                              "0s",
		time.Minute:                    "1m0s",
		179994 * time.Microsecond:      "179.99ms",
		1549999 * time.Nanosecond:      "1.55ms",
		time.Duration(2.5 * 1e9):       "2.5s",
		time.Hour + 30*time.Second:     "1h0m30s",
		3*time.Millisecond + 4*1e3:     "3ms",
		30320*time.Nanosecond + 4:      "30.32µs",
		100*time.Millisecond + 5*1e3:   "100.01ms",
		999*time.Millisecond + 996*1e3: "1s",
	} {
		if got := units.K6Duration(d); got != want {
			t.Errorf("units.K6Duration(%d) = %q, want %q", d, got, want)
		}
	}
}

func TestSIBytesAndThousands(t *testing.T) {
	for n, want := range map[float64]string{
		105e6: "105 MB", 1.7e6: "1.7 MB", 964e3: "964 kB", 999: "999 B", 0: "0 B", 12.3e9: "12 GB",
	} {
		if got := units.SIBytes(n); got != want {
			t.Errorf("units.SIBytes(%v) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := units.Thousands(n); got != want {
			t.Errorf("units.Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// seedResult is seed 000's first k6 run as a Result (elapsed rounded to
// make the rate easy to check), plus a failure and a verdict.
func seedResult() *Result {
	return &Result{
		Version:  ResultVersion,
		Scenario: "transfer",
		Params: Params{Target: "http://127.0.0.1:8080", VUs: 100, Duration: 60, Seed: 42,
			Extra: map[string]string{"accounts": "50000", "batch": "0"}},
		Start:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine: measure.Machine{OS: "linux", Arch: "amd64", CPUs: 2, GOMAXPROCS: 2, GoVersion: "go1.26"},
		Totals: Totals{Elapsed: 60, Requests: 86776, Failed: 3, Iterations: 86776, Ops: 86776, FailedOps: 3,
			BytesSent: 58e6, BytesReceived: 105e6, RequestsPerS: 86776.0 / 60, OpsPerS: 86776.0 / 60, VUs: 100},
		Latency:         Latency{Avg: 69.03, Min: 1.55, Med: 83.92, Max: 1040, P90: 91.73, P95: 94.17, P99: 99.5, P999: 120},
		Spectrum:        []measure.Quantile{{Percentile: 50, Ms: 83.92, Count: 43388}, {Percentile: 100, Ms: 1040, Count: 86776}},
		Failures:        map[string]int64{"503 overloaded": 3},
		OpFailures:      map[string]int64{"503 overloaded": 3},
		FailureExamples: map[string]string{"503 overloaded": "shard queue full"},
		Series: []measure.Point{{Second: 0, Span: 1, Requests: 1400, Ops: 1400, P50Ms: 80, P99Ms: 99, MaxMs: 120},
			{Second: 1, Span: 0.5, Requests: 700, Failed: 3, Ops: 700, FailedOps: 3, P50Ms: 81, P99Ms: 98, MaxMs: 110, Late: 2}},
		Client:        ClientCost{CPU: 12, CPUShare: 0.2, MicrosPerRequest: 138.3, GOMAXPROCS: 2},
		MachineCPU:    &measure.MachineCPU{Steal: 0.08},
		MachineStalls: machineStalls(),
		Verdict:       &Verdict{Target: "≥ 30,000 TPS with p95 ≤ 10 ms", Pass: false, Detail: "1,446 TPS, p95 94.17 ms"},
	}
}

func TestWriteSummaryK6Shape(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, seedResult()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// Lines as k6 prints them (seed 000), with our p(99) added to the trend.
	for _, want := range []string{
		"     checks.........................: 100.00% ✓ 86773       ✗ 3\n", // k6 rounds too
		"     data_received..................: 105 MB  1.8 MB/s\n",
		"     data_sent......................: 58 MB   967 kB/s\n",
		"     http_req_duration..............: avg=69.03ms min=1.55ms med=83.92ms max=1.04s p(90)=91.73ms p(95)=94.17ms p(99)=99.5ms\n",
		"     http_req_failed................: 0.00%   ✓ 3           ✗ 86773\n",
		"     http_reqs......................: 86776   1446.266667/s\n",
		"     iterations.....................: 86776   1446.266667/s\n",
		"     vus............................: 100     min=100       max=100\n",
		"     vus_max........................: 100     min=100       max=100\n",
		"       503 overloaded...............: 3 requests, 3 ops (e.g. \"shard queue full\")\n",
		"     load_generator_cpu.............: 20.0% of one core, 138.3µs per request (GOMAXPROCS 2)\n",
		"     machine_cpu....................: 8% stolen by the hypervisor (not comparable with a quiet run)\n",
		"running (1m00.0s), 000/100 VUs, 86776 complete and 0 interrupted iterations\n",
		"verdict: MISS (target ≥ 30,000 TPS with p95 ≤ 10 ms): 1,446 TPS, p95 94.17 ms\n",
		"       params: accounts=50000 batch=0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q; got:\n%s", want, out)
		}
	}
	// k6 lists metrics alphabetically.
	if strings.Index(out, "http_reqs.") > strings.Index(out, "iterations.") ||
		strings.Index(out, "checks.") > strings.Index(out, "data_received.") {
		t.Errorf("metrics out of order:\n%s", out)
	}
	if strings.Contains(out, "transfers.") {
		t.Errorf("single-transfer summary has an ops line:\n%s", out)
	}
}

func TestWriteSummaryBatchAddsOpsLine(t *testing.T) {
	r := seedResult()
	r.Totals.Ops, r.Totals.OpsName = 86776000, "transfers"
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "     transfers......................: 86776000 1446266.666667/s\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q; got:\n%s", want, buf.String())
	}
	if strings.Index(buf.String(), "iterations.") > strings.Index(buf.String(), "transfers.") {
		t.Errorf("transfers not sorted after iterations:\n%s", buf.String())
	}
}

func TestResultJSONRoundTrip(t *testing.T) {
	want := seedResult()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the result:\n got %+v\nwant %+v", got, want)
	}
}

func TestResultJSONFieldNames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, seedResult()); err != nil {
		t.Fatal(err)
	}
	// Later readers (HTML report, compare) depend on these names.
	for _, key := range []string{`"scenario": "transfer"`, `"requests_per_s"`, `"latency_ms"`, `"p95": 94.17`,
		`"series"`, `"p50_ms"`, `"failures"`, `"503 overloaded": 3`, `"machine"`, `"cpu_share"`, `"duration_s": 60`,
		`"machine_stalls"`, `"stalled_share": 0.037`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestReadJSONRejectsOtherVersion(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader(`{"version":99}`)); err == nil {
		t.Error("ReadJSON accepted version 99")
	}
}

func TestWriteFileByExtension(t *testing.T) {
	dir := t.TempDir()
	res := seedResult()

	jsonPath := filepath.Join(dir, "r.json")
	if err := WriteFile(jsonPath, res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, res) {
		t.Error("the .json file does not read back as the result")
	}

	mdPath := filepath.Join(dir, "r.MD")
	if err := WriteFile(mdPath, res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# surge bench transfer", "| requests | 86,776 (1,446/s) |",
		"| 69.03 | 1.55 | 83.92 | 91.73 | 94.17 | 99.50 | 120.00 | 1040.00 |", "| 503 overloaded | 3 | 3 | shard queue full |",
		"| 1 | 1,400 | 1,400 | 3 | 81.00 | 98.00 | 110.00 |", "**Verdict: MISS**"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}

	if err := WriteFile(filepath.Join(dir, "r.txt"), res); err == nil {
		t.Error("WriteFile accepted a .txt path")
	}
	if _, err := os.Stat(filepath.Join(dir, "r.txt")); !os.IsNotExist(err) {
		t.Error("WriteFile created a file for a bad extension")
	}
}

func TestResultErr(t *testing.T) {
	r := seedResult()
	if err := r.Err(); err != nil {
		t.Errorf("3 failures in 86776 reported as a failed run: %v", err)
	}
	r.Totals.FailedOps = r.Totals.Ops / 50 // 2% of transfers
	if r.Err() == nil {
		t.Error("2% failed ops not reported as a failed run")
	}
	r.Totals = Totals{}
	if r.Err() == nil {
		t.Error("a run with no requests not reported as failed")
	}
}
