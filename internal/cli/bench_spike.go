package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/spike"
)

func newBenchSpikeCommand() *cobra.Command {
	cfg := spike.DefaultSpikeConfig()
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "spike",
		Short: "A burst of seat reservations for a fixed stock (ticket-master, seeds 002/003)",
		Long: `Reproduce ticket-master's spike test (seeds 002 and 003): create --events events
of --areas areas of --rows × --cols seats, then fire -n reservation requests
from -c concurrent workers. Each request asks for 1 to --max-seats adjacent
seats (RANDOM) of a random area of a random event, then waits for the outcome
with a long-poll GET /v1/reservation/{id}, as ticket-master's Go client does
(GET again on 503); with --wait it asks for the outcome in the POST's own
reply (?wait=) instead.

Latency is measured per request from its start (the POST) to its outcome;
server processing time sums, over the request's exchanges, the time from
sending each to having its reply (httpstat's ServerProcessing). The summary
adds the completion time, the sold-out time (from the replies, and the
server's own soldOutAt when it reports one), the seats sold per area and in
total, the reservations by outcome, and the server's peak RSS from /metrics.

No seat may be sold twice. The run keeps a bit per seat: a seat in two
RESERVED replies is a double booking. After the run it reads every area's
seat map from the server and checks that each sold seat is held by the
reservation whose reply had it, and that the server holds no other seats.
The exit status is 1 on any double booking or disagreement with the seat
maps, and when setup failed, the target was unreachable, or more than 1% of
requests failed.

Events are named <prefix>-0, <prefix>-1, …: new ones every run unless
--event-prefix is given (creating an event again with the same definition is
a replay, so its seats may already be sold).

With --http2 the workers' requests travel as streams of --conns HTTP/2
connections (h2c with prior knowledge, as ticket-master's client with its
--http2), thousands of streams on each, instead of a connection per worker:
with the load lab's own HTTP/2 client (h2fast) to http:// targets, with
net/http's to https:// ones or given --http-client h2c. The summary then says what the server did to those connections: GOAWAY
frames and stream resets (RST_STREAM) by error code, connections lost, and
how many were dialled. --ceiling then runs the same client shape (a POST,
then a GET, by the same workers over as many connections) against an empty
Go h2c handler inside the load generator: the most this client and machine
can do, and the share of it the spike reached.` + stallsHelp,
		Example: `  surge bench spike -n 1000000 --events 4 --areas 100 --rows 20 --cols 20
  surge bench spike -n 50000 --areas 80 -c 500 --wait 10s --out spike.json
  surge bench spike -n 1000000 -c 1000 --http2 --conns 16 --ceiling --out spike-h2.json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchScenario(cmd, &opts, func(cmd *cobra.Command) (*report.Result, error) {
				cfg.Log = cmd.ErrOrStderr()
				cfg.CeilingTarget = startCeilingProcess
				return spike.RunSpike(cmd.Context(), cfg)
			})
		},
	}
	fs := cmd.Flags()
	addSpikeCommonFlags(fs, &cfg.Common, &opts)
	fs.IntVar(&cfg.Events, "events", cfg.Events, "number of events to create")
	fs.IntVar(&cfg.Areas, "areas", cfg.Areas, "areas per event")
	fs.IntVar(&cfg.Rows, "rows", cfg.Rows, "rows of seats per area")
	fs.IntVar(&cfg.Cols, "cols", cfg.Cols, "seats per row")
	fs.IntVar(&cfg.MaxSeats, "max-seats", cfg.MaxSeats, "each request asks for 1 to this many adjacent seats")
	fs.StringVar(&cfg.EventPrefix, "event-prefix", cfg.EventPrefix, "name the events <prefix>-0, <prefix>-1, …; empty: spike-<run id>, new events every run")
	fs.DurationVar(&cfg.Wait, "wait", cfg.Wait, "ask for the final reservation in the POST's reply (?wait=DURATION) instead of a long-poll GET; 0: POST then GET")
	fs.DurationVar(&cfg.Hold, "hold", cfg.Hold, "hold time of the events' reservations (holdSeconds); longer than the run, so the seat maps still hold every sale when checked")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "times a request answered 503 is sent again")
	addSpikeHTTP2Flags(fs, &cfg)
	bench.DocumentEnv(fs, bench.EnvPrefix)
	return cmd
}

// addSpikeCommonFlags adds the flags every scenario has, in the spike's
// terms: ticket-master's client spells the requests -n and ghz the
// concurrency -c. There is no warm-up: it would sell the seats.
func addSpikeCommonFlags(fs *pflag.FlagSet, c *bench.Common, opts *benchOptions) {
	common := pflag.NewFlagSet("common", pflag.ContinueOnError)
	addBenchCommonFlags(common, c, opts)
	spike := map[string]struct{ shorthand, usage string }{
		"vus":        {"c", "concurrent workers, each with one reservation in flight (and one connection)"},
		"iterations": {"n", "reservation requests in all, shared evenly by the workers"},
		"duration":   {"", "stop after this long even if not all -n requests are done; 0: no limit"},
		"seed":       {"", "seed for the random areas and seat counts, to repeat a run's choices; 0 picks one (reported in the summary)"},
	}
	common.VisitAll(func(f *pflag.Flag) {
		if f.Name == "warmup" {
			return
		}
		if s, ok := spike[f.Name]; ok {
			f.Shorthand, f.Usage = s.shorthand, s.usage
		}
		fs.AddFlag(f)
	})
}

// addSpikeHTTP2Flags defines the flags of the HTTP/2 transport.
func addSpikeHTTP2Flags(fs *pflag.FlagSet, cfg *spike.SpikeConfig) {
	fs.BoolVar(&cfg.HTTP2, "http2", cfg.HTTP2, "send over --conns HTTP/2 connections (h2c with prior knowledge to an http:// target, HTTP/2 over TLS to an https:// one), the workers' requests as concurrent streams on them")
	fs.IntVar(&cfg.Conns, "conns", 16, "HTTP/2 connections of --http2")
	fs.BoolVar(&cfg.Ceiling, "ceiling", cfg.Ceiling, "after the spike, run the same HTTP/2 client shape against an empty Go h2c handler in a process of its own, as the ceiling (needs --http2)")
}
