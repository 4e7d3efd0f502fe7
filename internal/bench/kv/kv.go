package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Targets for the kv scenario (docs/BENCHMARKS.md, "Targets").
const (
	TargetKVOneConnRPS = 12000 // PUT or GET on one connection, at p99 ≤ 1 ms
	TargetKVP99Ms      = 1
	TargetKVManyConns  = 64
	TargetKVManyRPS    = 60000
)

// KV operations: what each request of a run does.
const (
	KVPut    = "put"
	KVGet    = "get"
	KVDelete = "delete"
	KVMixed  = "mixed" // GETs and PUTs, ReadShare of them GETs
	KVRange  = "range" // GET /v0/entities over RangeKeys consecutive keys
)

// Key distributions.
const (
	KVUniform = "uniform"
	KVZipf    = "zipf"
)

// KVConfig configures the kv scenario, report 004's wrk2 runs: an open
// model at a constant rate against the highload-dht API. Common.VUs is
// the number of connections; Common.Pipeline, above 1, splits each
// connection's schedule into that many senders that pipeline on it, so
// that a request leaves when it is due even while earlier replies are out.
type KVConfig struct {
	bench.Common
	// Rate is the total requests due per second; with FindMax, the rate
	// the search starts from.
	Rate float64
	// Op is one of KVPut, KVGet, KVDelete, KVMixed, KVRange.
	Op string
	// Keys is the key space: keys k0000000000 … k<Keys-1>, zero-padded so
	// that numeric and key order agree.
	Keys int
	// Dist picks keys: KVUniform, or KVZipf with exponent ZipfS (> 1),
	// the lowest keys hottest.
	Dist  string
	ZipfS float64
	// ValueSize is the size of each PUT's value, random bytes.
	ValueSize int
	// Prefill, if positive, PUTs keys 0 … Prefill-1 through the public
	// API with PrefillConns connections before the run.
	Prefill      int
	PrefillConns int
	// RangeKeys is the width of each range of KVRange, in keys.
	RangeKeys int
	// ReadShare is the share of GETs in KVMixed.
	ReadShare float64
	// FindMax searches for the highest rate that meets SLO, running one
	// probe of Common.Duration per rate tried, at most MaxProbes.
	FindMax   bool
	SLO       string
	MaxProbes int
}

// DefaultKVConfig returns report 004's settings: one connection, PUTs over
// 1.3 million keys.
func DefaultKVConfig() KVConfig {
	c := bench.DefaultCommon()
	c.VUs, c.Duration, c.Timeout = 1, 30*time.Second, 10*time.Second
	return KVConfig{
		Common: c, Rate: 1000, Op: KVPut, Keys: 1_300_000, Dist: KVUniform, ZipfS: 1.1,
		ValueSize: 100, PrefillConns: 64, RangeKeys: 10, ReadShare: 0.5,
		SLO: "p99=1ms", MaxProbes: 12,
	}
}

func (c KVConfig) validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	switch {
	case c.Duration <= 0:
		return errors.New("bench: kv needs a --duration")
	case c.Rate <= 0:
		return errors.New("bench: --rate must be positive")
	case c.Op != KVPut && c.Op != KVGet && c.Op != KVDelete && c.Op != KVMixed && c.Op != KVRange:
		return fmt.Errorf("bench: --op must be put, get, delete, mixed or range, not %q", c.Op)
	case c.Keys < 1 || c.Keys > 1e10:
		return errors.New("bench: --keys must be between 1 and 10,000,000,000")
	case c.Dist != KVUniform && c.Dist != KVZipf:
		return fmt.Errorf("bench: --keys-dist must be uniform or zipf, not %q", c.Dist)
	case c.Dist == KVZipf && c.ZipfS <= 1:
		return errors.New("bench: --zipf-s must be greater than 1")
	case c.ValueSize < 0 || c.Prefill < 0 || c.PrefillConns < 1 || c.RangeKeys < 1:
		return errors.New("bench: --value-size and --prefill must not be negative, --prefill-connections and --range-keys must be positive")
	case c.ReadShare < 0 || c.ReadShare > 1:
		return errors.New("bench: --read-share must be between 0 and 1")
	case c.FindMax && c.MaxProbes < 1:
		return errors.New("bench: --max-probes must be positive")
	}
	if c.FindMax {
		if _, err := report.ParseSLO(c.SLO); err != nil {
			return err
		}
	}
	return nil
}

// RunKV runs the kv scenario against cfg.Target: the prefill if asked,
// then one run at cfg.Rate, or the search of FindMax.
func RunKV(ctx context.Context, cfg KVConfig) (*report.Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Prefill > cfg.Keys {
		cfg.Keys = cfg.Prefill
	}
	cfg.Common = cfg.Common.WithDefaults()
	progress := report.NewProgress(cfg.Log, "")
	if err := setUpKV(ctx, cfg, progress); err != nil {
		return nil, err
	}
	client, err := cfg.HTTPClient(cfg.senders())
	if err != nil {
		return nil, err
	}
	defer client.Close()
	if cfg.FindMax {
		return findMaxKV(ctx, client, cfg, progress)
	}
	progress.Printf("kv: %s at %s/s on %s for %s", cfg.Op, units.Rate(cfg.Rate), cfg.describeConns(), units.K6Duration(cfg.Duration))
	res, _, err := runKV(ctx, client, cfg, cfg.Rate, progress.Tick, nil)
	return res, err
}

// setUpKV checks that the target is ready and runs the prefill, if asked,
// on connections of its own: the prefill is a closed loop, never
// pipelined, and its connections are closed before the run.
func setUpKV(ctx context.Context, cfg KVConfig, progress *report.Progress) error {
	closed := cfg.Common
	closed.Pipeline = 0
	client, err := closed.HTTPClient(cfg.PrefillConns)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := bench.CheckReady(ctx, client); err != nil {
		return err
	}
	if cfg.Prefill > 0 {
		return prefillKV(ctx, client, cfg, progress)
	}
	return nil
}

// runKV runs the schedule once at rate and builds its Result, with the
// latency at each quantile of slo, and returns the distributions of the
// machine's stalls beside it.
func runKV(ctx context.Context, client *httpc.HTTPClient, cfg KVConfig, rate float64, onTick func(measure.Tick), slo []report.SLOTerm) (*report.Result, *measure.StallHistograms, error) {
	var misses atomic.Int64
	values := randomBytes(cfg.Seed, 2*cfg.ValueSize+1)
	open := load.Open{Senders: cfg.senders(), Rate: rate, Duration: cfg.Duration, Warmup: cfg.Warmup, Seed: cfg.Seed, NoStallMeter: cfg.NoStallMeter, OnTick: onTick}
	run, err := open.Run(ctx, func(vctx context.Context, vu *load.VU) (load.Request, error) {
		return newKVConn(vctx, client, cfg, vu, values, &misses).send, nil
	})
	if err != nil {
		return nil, nil, err
	}
	res := report.NewResult("kv", cfg.Params(kvParams(cfg, rate)), run.Run, client)
	res.Spectrum = run.Stats.SpectrumTicks(wrkTicksPerHalf)
	res.KV = &report.KVReport{
		Rate: rate, Op: cfg.Op, Unsent: run.Unsent, Misses: misses.Load(),
		LatencyStdevMs: run.Stats.StdDevMs(), WithinStdev: run.Stats.WithinStdev(),
	}
	if len(slo) > 0 {
		res.KV.SLOMs = map[string]float64{}
		for _, t := range slo {
			res.KV.SLOMs[t.Name] = float64(run.Stats.Quantile(t.Quantile)) / float64(time.Millisecond)
		}
	}
	res.Verdict = kvVerdict(res, cfg, run.StallHists)
	return res, run.StallHists, nil
}

// senders is the number of schedules: one per connection, or Pipeline
// per pipelined connection.
func (c KVConfig) senders() int { return c.VUs * max(c.Pipeline, 1) }

// describeConns says how the run's requests travel, for progress lines.
func (c KVConfig) describeConns() string {
	if c.Pipeline > 1 {
		return fmt.Sprintf("%d connection(s), each with up to %d requests pipelined", c.VUs, c.Pipeline)
	}
	return fmt.Sprintf("%d connection(s)", c.VUs)
}

func kvParams(c KVConfig, rate float64) map[string]string {
	return map[string]string{
		"op": c.Op, "rate": strconv.FormatFloat(rate, 'f', -1, 64), "connections": strconv.Itoa(c.VUs),
		"keys": strconv.Itoa(c.Keys), "keys_dist": c.Dist, "value_size": strconv.Itoa(c.ValueSize),
		"prefill": strconv.Itoa(c.Prefill), "http_client": string(c.Client.OrDefault()),
	}
}

// kvVerdict judges a run against its targets: ≥ 12,000 PUTs or GETs per
// second at p99 ≤ 1 ms on one connection, ≥ 60,000 per second on 64.
// stalls explain a missed p99.
func kvVerdict(r *report.Result, c KVConfig, stalls *measure.StallHistograms) *report.Verdict {
	ok := r.Totals.Requests - r.Totals.Failed
	rps := measure.PerSecond(ok, float64(r.Totals.Elapsed))
	detail := fmt.Sprintf("%s requests/s, p99 %s", units.Rate(rps), units.K6Duration(units.MsDuration(r.Latency.P99)))
	switch {
	case c.VUs >= TargetKVManyConns:
		return &report.Verdict{Target: fmt.Sprintf("≥ %s requests/s on %d connections", units.Thousands(TargetKVManyRPS), TargetKVManyConns),
			Pass: rps >= TargetKVManyRPS && r.FailureRate() <= report.MaxFailureRate, Detail: detail}
	case c.VUs == 1 && (c.Op == KVPut || c.Op == KVGet):
		p99 := report.SLOTerm{Name: "p99", Quantile: 0.99, Max: TargetKVP99Ms * time.Millisecond}
		return &report.Verdict{Target: fmt.Sprintf("≥ %s %ss/s at p99 ≤ %d ms on one connection", units.Thousands(TargetKVOneConnRPS), c.Op, TargetKVP99Ms),
			Pass:   rps >= TargetKVOneConnRPS && r.Latency.P99 <= TargetKVP99Ms && r.FailureRate() <= report.MaxFailureRate,
			Detail: detail + report.StallVerdictNote(stalls, r, p99, r.Latency.P99)}
	}
	return nil
}

// kvConn is one connection's request maker.
type kvConn struct {
	ep     *httpc.Endpoint
	cfg    *KVConfig
	keys   func() int // the next key's index
	values []byte     // PUT values are windows into it
	uri    []byte     // the request-URI, rebuilt per request
	misses *atomic.Int64
}

func newKVConn(ctx context.Context, c *httpc.HTTPClient, cfg KVConfig, vu *load.VU, values []byte, misses *atomic.Int64) *kvConn {
	k := &kvConn{ep: c.Endpoint(ctx, http.MethodGet, "/v0/entity"), cfg: &cfg, values: values, misses: misses}
	k.keys = func() int { return vu.Rand.IntN(cfg.Keys) }
	if cfg.Dist == KVZipf && cfg.Keys > 1 {
		z := rand.NewZipf(vu.Rand, cfg.ZipfS, 1, uint64(cfg.Keys-1))
		k.keys = func() int { return int(z.Uint64()) }
	}
	return k
}

// send sends one request of the configured operation.
func (k *kvConn) send(ctx context.Context, vu *load.VU) measure.Outcome {
	op := k.cfg.Op
	if op == KVMixed {
		op = KVPut
		if vu.Rand.Float64() < k.cfg.ReadShare {
			op = KVGet
		}
	}
	i := k.keys()
	var method string
	var body []byte
	want := http.StatusOK
	switch op {
	case KVRange:
		k.uri = appendKVKey(append(k.uri[:0], "/v0/entities?start="...), i)
		k.uri = appendKVKey(append(k.uri, "&end="...), i+k.cfg.RangeKeys)
		method = http.MethodGet
	default:
		k.uri = appendKVKey(append(k.uri[:0], "/v0/entity?id="...), i)
		switch op {
		case KVPut:
			method, want = http.MethodPut, http.StatusCreated
			off := vu.Rand.IntN(len(k.values) - k.cfg.ValueSize)
			body = k.values[off : off+k.cfg.ValueSize]
		case KVDelete:
			method, want = http.MethodDelete, http.StatusAccepted
		default:
			method = http.MethodGet
		}
	}
	status, reply, err := k.ep.SendURI(method, k.uri, body)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return measure.Outcome{}
		}
		return measure.Outcome{Failure: httpc.ErrorKey(err), Detail: err.Error()}
	case status == want:
		return measure.Outcome{}
	case status == http.StatusNotFound && op == KVGet:
		k.misses.Add(1) // a miss is an answer, not a failure (wrk2 counts it as non-2xx)
		return measure.Outcome{}
	}
	return measure.Outcome{Failure: httpc.StatusKey(status, reply), Detail: httpc.ProblemDetail(reply)}
}

// appendKVKey appends key i: "k" and ten zero-padded digits.
func appendKVKey(b []byte, i int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(i), 10)
	b = append(b, 'k')
	for range 10 - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}

// randomBytes returns n bytes from a source seeded with seed: values are
// windows into them, binary like the course's random values.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xb5))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// wrkTicksPerHalf is the resolution of wrk2's detailed percentile spectrum.
const wrkTicksPerHalf = 5
