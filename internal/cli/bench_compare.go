package cli

import (
	"github.com/spf13/cobra"

	"github.com/surge-dev/surge/internal/bench/report"
)

// newBenchCompareCommand is `surge bench compare a.json b.json`.
func newBenchCompareCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "compare a.json b.json",
		Short: "Print the change between two runs, figure by figure",
		Long: `Read two results written with --out FILE.json and print each figure of both
(throughput, latency percentiles, failures, the load generator's cost) with
the change from a to b and whether it is better or worse. Differences in
scenario, parameters or machine are listed first: with them, a change need
not be surge's doing.`,
		Example:      `  surge bench compare before.json after.json`,
		Args:         cobra.ExactArgs(2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := report.ReadResultFile(args[0])
			if err != nil {
				return err
			}
			b, err := report.ReadResultFile(args[1])
			if err != nil {
				return err
			}
			return report.Compare(cmd.OutOrStdout(), args[0], a, args[1], b)
		},
	}
}
