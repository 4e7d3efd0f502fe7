package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/transfer"
)

// newBenchCommand is `surge bench`, the load lab (docs/BENCHMARKS.md). Each scenario
// is a subcommand; the work is done in internal/bench.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench <scenario>",
		Short: "Run a load test against a running surge",
		Long: `Run one of surge's load-lab scenarios against a running surge (--target) and
print a summary in the shape of the load-test report the scenario reproduces,
so that figures compare line by line. --out writes the result as JSON (for
surge bench compare), Markdown tables, or a self-contained HTML report with
charts of throughput and latency over time and a latency histogram.

Every flag can also be set from the environment as SURGE_<FLAG>, upper case
with dashes as underscores (--api-key: SURGE_API_KEY); a flag on the command
line wins over the environment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchTransferCommand())
	cmd.AddCommand(newBenchSpikeCommand())
	cmd.AddCommand(newBenchKVCommand())
	cmd.AddCommand(newBenchWalletCommand())
	cmd.AddCommand(newBenchTPCBCommand())
	cmd.AddCommand(newBenchChaosCommand())
	cmd.AddCommand(newBenchH2CTargetCommand())
	cmd.AddCommand(newBenchCompareCommand())
	return cmd
}

// benchGCPercent is the load generator's GOGC unless GOGC is set.
const benchGCPercent = 400

// stallsHelp ends the help of the scenarios that judge latency.
const stallsHelp = `

The summary's machine_stalls line says how much the machine itself stalled
while the run was measured (a thread that sleeps a millisecond at a time,
timing how late it wakes); when those stalls alone are enough to break a
latency bound, the verdict says so, and the verdict stands. The meter costs
the load generator 2-4% of one core; --no-stall-meter leaves it off.`

// benchOptions are the command-line settings that are not part of a
// scenario's configuration.
type benchOptions struct {
	out        string
	cpuProfile string
}

func newBenchTransferCommand() *cobra.Command {
	cfg := transfer.DefaultTransferConfig()
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "transfer",
		Short: "Money transfers between random accounts (k6, seed 000)",
		Long: `Reproduce seed 000's k6 test: --vus closed-loop virtual users, each sending a
transfer of a random amount between two random accounts as soon as its last
one was answered, for --duration. Each transfer carries a unique id (its
idempotency key), so every request is new work.

Setup creates --accounts accounts (bench-0, bench-1, ...) and funds each with
--fund from @world through the batch route, then reads a sample back. It is
idempotent: running it again reuses the accounts and does not fund twice.
--no-setup skips it.

With --batch N each request posts N transfers to /v1/transfers/batch and the
summary adds transfers/s.

The VUs send with a lean HTTP/1.1 client by default (--http-client fast): on
a machine shared with the server, every microsecond the load generator spends
on a request is taken from the server. --http-client std sends with Go's
net/http instead, to compare the two or to reach an https target; the
summary's load generator CPU line shows the difference.

The summary ends with an informational verdict against its target (≥ 30,000 TPS
with p95 ≤ 10 ms; ≥ 500,000 transfers/s with --batch). The exit status is 1
only if setup failed, the target was unreachable, or more than 1% of requests
or transfers failed.` + stallsHelp,
		Example: `  surge bench transfer --vus 100 --duration 1m
  surge bench transfer --batch 1000 --duration 30s --out batch.json
  SURGE_TARGET=http://10.0.0.5:8080 SURGE_API_KEY=secret surge bench transfer --no-setup`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchScenario(cmd, &opts, func(cmd *cobra.Command) (*report.Result, error) {
				cfg.Log = cmd.ErrOrStderr()
				return transfer.RunTransfer(cmd.Context(), cfg)
			})
		},
	}
	fs := cmd.Flags()
	addBenchCommonFlags(fs, &cfg.Common, &opts)
	fs.IntVar(&cfg.Accounts, "accounts", cfg.Accounts, "number of accounts transfers run between")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch,
		fmt.Sprintf("transfers per request on POST /v1/transfers/batch (1-%d); 0 posts single transfers to /v1/transfers", transfer.MaxBatch))
	fs.Int64Var(&cfg.AmountMax, "amount-max", cfg.AmountMax, "largest transfer amount in minor units; amounts are uniform in 1..amount-max")
	fs.Int64Var(&cfg.Fund, "fund", cfg.Fund, "initial balance of each account in minor units, moved from @world during setup")
	fs.StringVar(&cfg.Currency, "currency", cfg.Currency, "currency of the accounts")
	fs.BoolVar(&cfg.NoSetup, "no-setup", cfg.NoSetup, "reuse the accounts of an earlier run instead of creating and funding them (a sample is still checked)")
	fs.DurationVar(&cfg.RetryJitter, "retry-jitter", cfg.RetryJitter, "after a 503, wait its Retry-After plus a random time up to this (a client with jittered backoff); 0 waits exactly Retry-After")
	bench.DocumentEnv(fs, bench.EnvPrefix)
	return cmd
}

// addBenchCommonFlags defines the flags every scenario has.
func addBenchCommonFlags(fs *pflag.FlagSet, c *bench.Common, opts *benchOptions) {
	addTargetFlag(fs, &c.Target, "")
	fs.StringVar(&c.APIKey, "api-key", c.APIKey, "API key, sent as 'Authorization: Bearer <key>' (needed when surge runs with --api-key)")
	fs.IntVar(&c.VUs, "vus", c.VUs, "number of virtual users, each with one request in flight (and its own connection)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of the measured run; 0 means until --iterations are done")
	fs.Int64Var(&c.Iterations, "iterations", c.Iterations, "stop after this many requests in total, shared evenly by the VUs; 0 means no limit (--duration decides)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "run the load this long before measuring (not counted in the results)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "longest wait for a reply before it counts as a failed request")
	fs.StringVar((*string)(&c.Client), "http-client", string(c.Client),
		"HTTP client of the VUs: 'fast', a lean HTTP/1.1 client that leaves the server more CPU on a shared machine (plain http only); 'fasthttp', the fasthttp library's client, to compare with it; 'std', Go's net/http; 'h2fast', the lab's own HTTP/2 client (h2c only; spike --http2's default); 'h2c', net/http's HTTP/2")
	fs.IntVar(&c.Pipeline, "pipeline", c.Pipeline,
		"VUs that share one connection, sending their requests without waiting for earlier replies (HTTP/1.1 pipelining; fewer system calls on both sides); 0 or 1: a connection per VU")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed for the random accounts and amounts, to repeat a run's choices; 0 picks one (reported in the summary)")
	addRunFlags(fs, c, opts)
}

// targetList is --target's value: repeated or comma-separated base URLs,
// kept comma-separated; the first one given replaces the default.
type targetList struct {
	list *string
	set  bool
}

func (t *targetList) String() string { return *t.list }
func (t *targetList) Type() string   { return "urls" }

func (t *targetList) Set(v string) error {
	if len(httpc.SplitTargets(v)) == 0 {
		return errors.New("no URL")
	}
	if !t.set {
		*t.list, t.set = "", true
	}
	if *t.list != "" {
		*t.list += ","
	}
	*t.list += v
	return nil
}

// addTargetFlag defines --target; note adds to its usage.
func addTargetFlag(fs *pflag.FlagSet, list *string, note string) {
	fs.Var(&targetList{list: list}, "target",
		"base URL of the surge under test; repeat it or separate URLs with commas to spread the load over several (a cluster's nodes)"+note)
}

// addRunFlags defines the flags every scenario shares for its output and
// for what it measures besides the server.
func addRunFlags(fs *pflag.FlagSet, c *bench.Common, opts *benchOptions) {
	fs.StringVar(&opts.out, "out", "", "also write the result to this file: .json (for surge bench compare), .md (Markdown tables) or .html (a self-contained report with charts)")
	fs.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the load generator itself to this file (go tool pprof)")
	fs.BoolVar(&c.NoStallMeter, "no-stall-meter", c.NoStallMeter, "leave the machine-stall meter off: the summary then has no machine_stalls, and the load generator keeps the 2-4% of one core the meter costs")
}

// runBenchScenario does what every scenario command does around its run:
// flags from the environment (into the scenario's configuration and opts,
// which run reads only after), output checks, interrupt handling,
// profiling, the summary, the --out file and the exit status.
func runBenchScenario(cmd *cobra.Command, opts *benchOptions, run func(*cobra.Command) (*report.Result, error)) error {
	if err := bench.BindEnv(cmd.LocalFlags(), bench.EnvPrefix, os.LookupEnv); err != nil {
		return err
	}
	// The load generator keeps little (histograms, a run's users) and throws
	// away every reply it decodes: collecting at Go's default GOGC of 100
	// cost it more CPU per call in A/B pairs (docs/BENCHMARKS.md, "Figures
	// behind the code"), CPU the server under test shares.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(benchGCPercent)
	}
	if opts.out != "" {
		if err := report.CheckOutPath(opts.out); err != nil {
			return err
		}
	}
	// The first interrupt ends the run early with a summary of what ran;
	// after stop, a second one kills the process as usual.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd.SetContext(ctx)

	stopProfile, err := bench.StartCPUProfile(opts.cpuProfile)
	if err != nil {
		return err
	}
	res, err := run(cmd)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if err := report.WriteSummary(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	if opts.out != "" {
		if err := report.WriteFile(opts.out, res); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", opts.out)
	}
	return res.Err()
}
