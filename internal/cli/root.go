// Package cli holds surge's command line: `surge serve` and `surge bench`.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs the surge command line with args and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCommand()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "surge",
		Short: "A server for flash-crowd workloads, and the load lab that measures it",
		Long: `surge serves four workloads on one port: a sharded, group-committed ledger;
flash-sale ticketing; key-value storage; and a wallet with friends and chat over
gRPC, gRPC-Web and Connect. It runs as one process on embedded storage, or as
the nodes of a cluster on Apache Kafka (serve --kafka). "surge bench" is its
load lab: it measures surge, and its peers, under each workload's load.

Every flag can also be set from the environment as SURGE_<FLAG>, with the flag's
name upper-cased and dashes turned into underscores (--api-key → SURGE_API_KEY).
A flag given on the command line wins over the environment.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return bindEnv(cmd.Flags()) },
	}
	root.AddCommand(newServeCommand(), newBenchCommand(), newHealthcheckCommand())
	return root
}

// EnvName is the environment variable that sets flag name.
func EnvName(name string) string {
	return "SURGE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// bindEnv sets every flag not given on the command line from its SURGE_*
// variable, if set.
func bindEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if serr := flags.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, serr)
			}
		}
	})
	return err
}
