package cli

import (
	"github.com/spf13/cobra"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/tpcb"
)

func newBenchTPCBCommand() *cobra.Command {
	cfg := tpcb.DefaultConfig()
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "tpcb",
		Short: "pgbench's TPC-B transaction on surge and, with --pg, on PostgreSQL in the same run",
		Long: `Run pgbench's default transaction ("TPC-B (sort of)") against surge's ledger
and, given --pg, the very same transaction mix against PostgreSQL, with the
same load model, VUs and turn length: surge's turn, PostgreSQL's turn, and
again, --rounds times, so that both see the same machine. The summary has
each target's transactions per second (median and range over its turns),
their ratio (median and range over the pairs of turns that ran back to back)
and every turn's rate and latency.

The transaction adds a random delta (±--delta-max) to an account, a teller
and a branch, reads the account's balance and records history. On surge it
is one atomic batch of three transfers between @world and the account, the
teller and the branch (the ledger keeps the history), then GET of the
account; on PostgreSQL it is pgbench's five statements in a transaction,
one round trip each, over one connection per VU. Both draw the same ids and
deltas.

Setup creates --scale branches, 10 × --scale tellers and --accounts accounts
(pgbench: 100,000 × --scale) on surge (ids tpcb-a1, tpcb-t1, tpcb-b1, ...;
repeatable) and, with --pg, (re)creates and fills pgbench's four tables there
as pgbench -i does. --no-setup reuses both. After the run, TPC-B's
consistency check runs on each: branches, tellers (and on PostgreSQL the
accounts and the history) sum to the same total.

The verdict is against the target: surge at least 10 × PostgreSQL's rate, same run.`,
		Example: `  surge bench tpcb --pg postgres://postgres@/postgres?host=/var/run/postgresql
  surge bench tpcb --pg "$PG" --scale 10 --vus 16 --duration 30s --rounds 3 --out tpcb.json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchScenario(cmd, &opts, func(cmd *cobra.Command) (*report.Result, error) {
				cfg.Log = cmd.ErrOrStderr()
				return tpcb.Run(cmd.Context(), cfg)
			})
		},
	}
	fs := cmd.Flags()
	addBenchCommonFlags(fs, &cfg.Common, &opts)
	fs.Lookup("duration").Usage = "length of each turn of each target"
	fs.Lookup("iterations").Usage = "stop each turn after this many transactions, shared evenly by the VUs; 0 means no limit (--duration decides)"
	fs.StringVar(&cfg.PG, "pg", cfg.PG, "PostgreSQL connection URL (postgres://user@host/db); the same mix then runs there, taking turns with surge")
	fs.IntVar(&cfg.Scale, "scale", cfg.Scale, "pgbench's scale factor: branches; tellers are 10 × scale")
	fs.IntVar(&cfg.Accounts, "accounts", cfg.Accounts, "accounts; 0 means pgbench's 100,000 × --scale")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "turns each target gets, alternating")
	fs.Int64Var(&cfg.DeltaMax, "delta-max", cfg.DeltaMax, "largest delta; deltas are uniform in ±1..delta-max")
	fs.BoolVar(&cfg.NoSetup, "no-setup", cfg.NoSetup, "reuse the accounts and tables of an earlier run of the same --scale and --accounts")
	bench.DocumentEnv(fs, bench.EnvPrefix)
	return cmd
}
