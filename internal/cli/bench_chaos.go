package cli

import (
	"github.com/spf13/cobra"

	"github.com/surge-dev/surge/internal/bench/chaos"
)

// newBenchChaosCommand is `surge bench chaos`.
func newBenchChaosCommand() *cobra.Command {
	cfg := chaos.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill surge with SIGKILL under mixed load, again and again, and audit every acknowledged write",
		Long: `Start the surge binary itself on a data directory, drive a mixed load at it
(transfers within and across shards, atomic batches, two-phase transfers,
seat reservations paid through the ledger, key-value writes and deletes)
and kill it with SIGKILL after a random number of acknowledged operations
(between --min-ops and --max-ops), --kills times. After each kill it
restarts surge on the same data and audits: every acknowledged write is
there with its value, nothing refused (4xx) is visible, money is conserved,
every balance equals the sum of its history, every paid reservation is
paid and no seat is sold twice. Operations without a reply may or may not
have happened; both are accepted.

With --flip, after each kill one byte in the first half of the ledger's
newest WAL is flipped: surge must refuse to start, naming the damage; the
byte is then restored. Then one byte of a random table file (the
ledger's or the key-value store's) is flipped: surge must refuse to
start naming the file, or answer /readyz 503 naming it once its check of
the table files meets it; the byte is restored and the audit runs as
usual.

With --fill-mib N, the data directory is a tmpfs of N MiB that the bench
mounts (it must run as root; elsewhere it says it cannot), and once per
cycle, halfway to the kill, it fills that disk: surge must refuse writes,
say so on /readyz, and take writes again by itself once the disk is
freed; operations refused meanwhile (507/503) count as unknown.

It prints a table in the manner of Jepsen (operations, acknowledged,
refused, unknown, lost, anomalies per kind of operation) and exits with
status 1 on any loss, anomaly or undetected damage.`,
		Example: `  surge bench chaos --kills 20
  surge bench chaos --kills 5 --flip --data /tmp/chaos --seed 42
  sudo surge bench chaos --kills 5 --fill-mib 256`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = cmd.ErrOrStderr()
			_, err := chaos.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Binary, "binary", cfg.Binary, "surge executable to start (default: this one)")
	fs.StringVar(&cfg.Dir, "data", cfg.Dir, "data directory (default: a new temporary one, removed afterwards)")
	fs.IntVar(&cfg.Kills, "kills", cfg.Kills, "how many times to kill -9 surge")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent clients")
	fs.IntVar(&cfg.MinOps, "min-ops", cfg.MinOps, "fewest acknowledged operations before a kill")
	fs.IntVar(&cfg.MaxOps, "max-ops", cfg.MaxOps, "most acknowledged operations before a kill")
	fs.BoolVar(&cfg.Flip, "flip", cfg.Flip, "after each kill, flip a byte of the ledger's WAL, then of a table file, and check that surge reports each, naming the file")
	fs.IntVar(&cfg.FillMiB, "fill-mib", cfg.FillMiB, "put the data on a tmpfs of this many MiB (needs root) and fill it once per cycle; 0: no")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the kill points and the load (0: random, printed)")
	return cmd
}
