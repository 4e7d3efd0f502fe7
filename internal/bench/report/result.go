package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// ResultVersion is the version of Result's JSON shape; readers such as
// `surge bench compare` check it.
const ResultVersion = 1

// Result is the outcome of one scenario run, independent of the scenario:
// what the summary, the --out files and later comparisons are made of.
type Result struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Params are the settings of the run.
	Params Params `json:"params"`
	// Start is when the measured phase began.
	Start   time.Time       `json:"start"`
	Machine measure.Machine `json:"machine"`
	Totals  Totals          `json:"totals"`
	// Latency summarises every request's latency, in milliseconds, but
	// for those the server refused at once, which Refused times apart.
	Latency Latency `json:"latency_ms"`
	// Refused counts and times the requests the server declined at once
	// (503 with Retry-After); absent if it declined none.
	Refused *Refusals `json:"refused,omitempty"`
	// Spectrum is the latency percentile spectrum, in milliseconds.
	Spectrum []measure.Quantile `json:"spectrum,omitempty"`
	// Failures counts failed requests by key ("422 insufficient_funds",
	// "error timeout"); OpFailures counts failed ops (items of a batch).
	Failures   map[string]int64 `json:"failures"`
	OpFailures map[string]int64 `json:"op_failures"`
	// FailureExamples holds, per key, the first detail seen.
	FailureExamples map[string]string `json:"failure_examples"`
	// Series is the per-second time series.
	Series []measure.Point `json:"series"`
	// Histogram is the latency histogram of the whole run.
	Histogram []measure.HistogramBucket `json:"histogram,omitempty"`
	// Sales is a spike's sales curve, which the spike scenario fills.
	Sales []measure.SalePoint `json:"sales,omitempty"`
	// Client is what the load generator itself cost.
	Client ClientCost `json:"client"`
	// MachineCPU is the machine's CPU time the hypervisor stole during the
	// measured phase (absent where unknown).
	MachineCPU *measure.MachineCPU `json:"machine_cpu,omitempty"`
	// MachineStalls is what the machine itself took from the measured
	// phase; absent from results of older versions.
	MachineStalls *measure.MachineStalls `json:"machine_stalls,omitempty"`
	// Verdict compares the run with the scenario's target, if it has one.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Spike is the spike scenario's own report.
	Spike *SpikeReport `json:"spike,omitempty"`
	// Interrupted reports a run cut short by the user.
	Interrupted bool `json:"interrupted,omitempty"`
	// KV holds what only the kv scenario reports.
	KV *KVReport `json:"kv,omitempty"`
	// Warnings say why the figures may not be trusted, such as a run too
	// short to be stable.
	Warnings []string `json:"warnings,omitempty"`
	// TPCB holds what only the tpcb scenario reports.
	TPCB *TPCBReport `json:"tpcb,omitempty"`
}

// Params are a run's settings: the ones every scenario has, plus the
// scenario's own in Extra (as strings, so that any reader can show them).
type Params struct {
	Target     string          `json:"target"`
	VUs        int             `json:"vus"`
	Duration   measure.Seconds `json:"duration_s"`
	Iterations int64           `json:"iterations,omitempty"`
	Warmup     measure.Seconds `json:"warmup_s,omitempty"`
	// Seed is a string in JSON: JavaScript numbers cannot hold a uint64.
	Seed  uint64            `json:"seed,string"`
	Extra map[string]string `json:"extra,omitempty"`
}

// Totals are a run's whole-run counts and rates.
type Totals struct {
	// Elapsed is the measured phase, in seconds.
	Elapsed    measure.Seconds `json:"elapsed_s"`
	Requests   int64           `json:"requests"`
	Failed     int64           `json:"failed"`
	Iterations int64           `json:"iterations"`
	// Ops counts units of work (transfers, for a batch run); OpsName names
	// them and is empty when an op is simply a request.
	Ops       int64  `json:"ops"`
	FailedOps int64  `json:"failed_ops"`
	OpsName   string `json:"ops_name,omitempty"`
	// BytesSent and BytesReceived count bytes on the wire, headers included.
	BytesSent     int64   `json:"bytes_sent"`
	BytesReceived int64   `json:"bytes_received"`
	RequestsPerS  float64 `json:"requests_per_s"`
	OpsPerS       float64 `json:"ops_per_s"`
	VUs           int     `json:"vus"`
}

// Latency summarises a latency distribution in milliseconds. Avg, Min and
// Max are exact; the percentiles have three significant digits.
type Latency struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Med  float64 `json:"med"`
	Max  float64 `json:"max"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
}

// Refusals are the requests a server declined at once, and their latency.
type Refusals struct {
	Count   int64   `json:"count"`
	Latency Latency `json:"latency_ms"`
}

// ClientCost is the load generator's own CPU use during the measured
// phase: on a machine shared with the server it is capacity the server
// did not get.
type ClientCost struct {
	// CPU is process CPU time in seconds (-1: unknown).
	CPU measure.Seconds `json:"cpu_s"`
	// CPUShare is CPU time over elapsed time: 1.0 is one core busy.
	CPUShare float64 `json:"cpu_share"`
	// MicrosPerRequest is CPU time per request, in microseconds.
	MicrosPerRequest float64 `json:"cpu_us_per_request"`
	GOMAXPROCS       int     `json:"gomaxprocs"`
}

// Verdict is a run judged against its scenario's target.
type Verdict struct {
	// Target describes the target, such as "≥ 30,000 TPS with p95 ≤ 10 ms".
	Target string `json:"target"`
	Pass   bool   `json:"pass"`
	// Detail states the measured figures against the target.
	Detail string `json:"detail"`
}

// MaxFailureRate is the share of failed requests or ops above which a run
// counts as failed.
const MaxFailureRate = 0.01

// FailureRate is the larger of the failed share of requests and of ops.
func (r *Result) FailureRate() float64 {
	return max(ratio(r.Totals.Failed, r.Totals.Requests), ratio(r.Totals.FailedOps, r.Totals.Ops))
}

// Err returns why the run as a whole failed, or nil: nothing completed,
// more than MaxFailureRate of it failed, or (spike) a seat was sold wrong.
func (r *Result) Err() error {
	if r.Spike != nil {
		if err := r.Spike.err(r.Totals.Failed); err != nil {
			return err
		}
	}
	if r.Totals.Requests == 0 {
		return fmt.Errorf("bench: no request completed")
	}
	if rate := r.FailureRate(); rate > MaxFailureRate {
		return fmt.Errorf("bench: %.2f%% of requests failed (more than %.0f%%)", rate*100, MaxFailureRate*100)
	}
	return nil
}

func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// NewResult fills a Result with what a closed-loop run measured. wire, if
// not nil, supplies the byte counts. The scenario adds its own Params.Extra,
// OpsName and Verdict.
func NewResult(scenario string, p Params, run *load.Run, wire *httpc.HTTPClient) *Result {
	s := run.Stats
	elapsed := run.Elapsed.Seconds()
	res := &Result{
		Version:         ResultVersion,
		Scenario:        scenario,
		Params:          p,
		Start:           run.Start.UTC(), // UTC, and no monotonic reading: as it reads back
		Machine:         measure.CurrentMachine(),
		Latency:         LatencyOf(s),
		Spectrum:        s.Spectrum(),
		Failures:        s.Failures(),
		OpFailures:      s.OpFailures(),
		FailureExamples: s.Examples(),
		Series:          run.Series,
		Histogram:       s.Histogram(),
		Interrupted:     run.Interrupted,
		Totals: Totals{
			Elapsed:      measure.ToSeconds(run.Elapsed),
			Requests:     s.Requests(),
			Failed:       s.Failed(),
			Iterations:   s.Iterations(),
			Ops:          s.Ops(),
			FailedOps:    s.FailedOps(),
			RequestsPerS: measure.PerSecond(s.Requests(), elapsed),
			OpsPerS:      measure.PerSecond(s.Ops(), elapsed),
			VUs:          run.VUs,
		},
		Client:        clientCost(run),
		MachineCPU:    run.MachineCPU,
		MachineStalls: run.Stalls,
	}
	if refused := s.Refused(); refused != nil {
		res.Refused = &Refusals{Count: refused.Timed(), Latency: LatencyOf(refused)}
	}
	if wire != nil {
		res.Totals.BytesSent, res.Totals.BytesReceived = wire.BytesSent(), wire.BytesReceived()
	}
	if run.Elapsed < MinStableRun && !run.Interrupted {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the measured run lasted %s: one shorter than %s measures the start "+
			"(connections, caches, the first collections), not the steady state; run for --duration 10s or more",
			units.K6Duration(run.Elapsed), units.K6Duration(MinStableRun)))
	}
	return res
}

// MinStableRun is the shortest measured run whose rates are stable: a
// wallet run of 500 calls (a few tens of milliseconds) measured 1,414
// GetMessages a second where 2 s measured 20,838.
const MinStableRun = 2 * time.Second

// writeWarnings ends a summary with r's warnings.
func writeWarnings(b *strings.Builder, r *Result) {
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
}

// LatencyOf summarises the latencies s recorded.
func LatencyOf(s *measure.Recorder) Latency {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Latency{
		Avg: ms(s.Mean()), Min: ms(s.Min()), Max: ms(s.Max()),
		Med: ms(s.Quantile(0.5)), P90: ms(s.Quantile(0.9)), P95: ms(s.Quantile(0.95)),
		P99: ms(s.Quantile(0.99)), P999: ms(s.Quantile(0.999)),
	}
}

func clientCost(run *load.Run) ClientCost {
	c := ClientCost{CPU: -1, GOMAXPROCS: measure.CurrentMachine().GOMAXPROCS}
	if run.CPU < 0 {
		return c
	}
	c.CPU = measure.ToSeconds(run.CPU)
	c.CPUShare = run.CPU.Seconds() / max(run.Elapsed.Seconds(), 1e-9)
	if n := run.Stats.Requests(); n > 0 {
		c.MicrosPerRequest = float64(run.CPU.Microseconds()) / float64(n)
	}
	return c
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a Result written by WriteJSON.
func ReadJSON(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: reading result: %w", err)
	}
	if r.Version != ResultVersion {
		return nil, fmt.Errorf("bench: result version %d, want %d", r.Version, ResultVersion)
	}
	return &r, nil
}

// outWriters maps an --out extension to its writer.
var outWriters = map[string]func(io.Writer, *Result) error{
	".json": WriteJSON,
	".md":   WriteMarkdown,
	".html": WriteHTML,
}

// CheckOutPath reports whether WriteFile can write path, so that a bad
// --out fails before a long run rather than after it.
func CheckOutPath(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if _, ok := outWriters[ext]; !ok {
		return fmt.Errorf("bench: cannot write %q: the extension must be .json, .md or .html", path)
	}
	return nil
}

// WriteFile writes r to path in the format its extension names.
func WriteFile(path string, r *Result) (err error) {
	if err := CheckOutPath(path); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return outWriters[strings.ToLower(filepath.Ext(path))](f, r)
}
