package cli

import (
	"github.com/spf13/cobra"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/kv"
	"github.com/surge-dev/surge/internal/bench/report"
)

// benchKVLong is bench kv's help.
const benchKVLong = `Reproduce seed 004's wrk2 runs against the /v0 key-value API: an open model
in which requests are due at a constant --rate, spread evenly over
--connections, whatever the server's latency. A connection still waiting for
a reply sends its next request as soon as it can, and every latency counts
from when the request was due, so a stall is charged for every request it
delayed (coordinated omission corrected). With --pipeline N, a connection
has up to N requests in flight, so requests leave when they are due (HTTP/1.1
pipelining; fewer system calls on both sides). Latencies go into an HdrHistogram;
the summary has wrk2's shape, with its detailed percentile spectrum.

Keys are k0000000000 ... up to --keys, picked uniformly or with a Zipf
distribution (--keys-dist zipf, lowest keys hottest); PUT values are
--value-size random bytes. --prefill N first PUTs keys 0..N-1 through the
public API over --prefill-connections connections (their writes share
fsyncs), as report 004 filled its 1.3 M keys with wrk before its GET runs.

--find-max searches for the highest rate that meets --slo, as report 004 did
by hand: one run of --duration per rate tried, doubling from --rate while
runs pass (halving while they fail), then bisecting to within 2%. A run
passes when every SLO percentile is within bounds, at least 99% of the due
requests were served and at most 1% failed. Every probe is printed; the
summary is the best passing run's.

The exit status is 1 only if the prefill failed, the target was unreachable
or more than 1% of requests failed.` + stallsHelp + `

Each --find-max probe's line has the machine's stalls and steal during the
probe, and the same explanation when they break the SLO.`

func newBenchKVCommand() *cobra.Command {
	cfg := kv.DefaultKVConfig()
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Key-value PUT/GET/DELETE/range at a constant rate (wrk2, seed 004)",
		Long:  benchKVLong,
		Example: `  surge bench kv --op put --rate 12000 --duration 1m
  surge bench kv --op get --prefill 1300000 --find-max --slo p99=1ms --duration 30s
  surge bench kv --op put --connections 64 --rate 60000 --duration 1m --out kv.json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchScenario(cmd, &opts, func(cmd *cobra.Command) (*report.Result, error) {
				cfg.Log = cmd.ErrOrStderr()
				return kv.RunKV(cmd.Context(), cfg)
			})
		},
	}
	fs := cmd.Flags()
	addTargetFlag(fs, &cfg.Target, "")
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "API key, sent as 'Authorization: Bearer <key>' (needed when surge runs with --api-key)")
	fs.IntVar(&cfg.VUs, "connections", cfg.VUs, "connections, each with at most one request in flight (wrk2's -c) unless --pipeline")
	fs.IntVar(&cfg.Pipeline, "pipeline", cfg.Pipeline,
		"requests each connection may have in flight: its schedule is split among that many senders that pipeline on it (HTTP/1.1), so a request leaves when it is due even while earlier replies are out; 0 or 1: one at a time, as wrk2")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests due per second, in total (wrk2's -R); with --find-max, where the search starts")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of the run, or of each --find-max probe")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "run the schedule this long before measuring (and before each probe)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest wait for a reply before it counts as a failed request")
	fs.StringVar((*string)(&cfg.Client), "http-client", string(cfg.Client), "'fast', the lean HTTP/1.1 client; 'fasthttp', the fasthttp library's client, to compare with it; or 'std', Go's net/http")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the keys and values, to repeat a run's choices; 0 picks one (reported in the summary)")
	fs.StringVar(&cfg.Op, "op", cfg.Op, "what each request does: put, get, delete, mixed (GETs and PUTs, see --read-share) or range (GET /v0/entities)")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "key space: keys 0..keys-1 (at least --prefill)")
	fs.StringVar(&cfg.Dist, "keys-dist", cfg.Dist, "key distribution: uniform or zipf")
	fs.Float64Var(&cfg.ZipfS, "zipf-s", cfg.ZipfS, "exponent of the zipf distribution (> 1; larger is more skewed)")
	fs.IntVar(&cfg.ValueSize, "value-size", cfg.ValueSize, "bytes in each PUT's value")
	fs.IntVar(&cfg.Prefill, "prefill", cfg.Prefill, "before the run, PUT keys 0..N-1 through the API")
	fs.IntVar(&cfg.PrefillConns, "prefill-connections", cfg.PrefillConns, "connections of the prefill, each sending its next PUT when the last is answered")
	fs.IntVar(&cfg.RangeKeys, "range-keys", cfg.RangeKeys, "width of each --op range request, in consecutive keys")
	fs.Float64Var(&cfg.ReadShare, "read-share", cfg.ReadShare, "share of GETs in --op mixed; the rest are PUTs")
	fs.BoolVar(&cfg.FindMax, "find-max", cfg.FindMax, "search for the highest rate that meets --slo, printing every probe")
	fs.StringVar(&cfg.SLO, "slo", cfg.SLO, "objective of --find-max: latency bounds per percentile, such as p99=1ms or p99=1ms,p99.9=5ms")
	fs.IntVar(&cfg.MaxProbes, "max-probes", cfg.MaxProbes, "most runs a --find-max search makes")
	addRunFlags(fs, &cfg.Common, &opts)
	bench.DocumentEnv(fs, bench.EnvPrefix)
	return cmd
}
