package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/wallet"
)

func newBenchWalletCommand() *cobra.Command {
	cfg := wallet.DefaultWalletConfig()
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "wallet",
		Short: "Wallet, friends and chat RPCs over gRPC (ghz, seed 001)",
		Long: `Reproduce report 001's ghz runs: -c concurrent callers make -n calls in all
(or call for --duration, which wins over -n) of one RPC (--call) as random
users, over gRPC (HTTP/2 without TLS) on --connections shared connections,
and print a summary in ghz's shape: count, total, slowest, fastest,
average, requests/sec, response time histogram, latency distribution and
status code distribution.

Setup registers --users users (wb0, wb1, ...; it logs in instead if they
exist), makes each the friend of the next --friends/2 users round a ring,
so everyone has --friends friends, funds every wallet with --fund from
@world over the ledger API (--api-key if the server has one), and gives
every friendship one transfer and one chat message, so that histories and
chat lists have something to show. It is repeatable: a second run logs in
and replays the funding and setup transfers.

Registration costs the server a bcrypt hash per user (tens of milliseconds
of CPU each), so a run keeps its users and their tokens (--users-cache, by default
in the user's cache directory, named after the target and the setup's
settings). The next run with the same settings against the same server
checks a sample of them (GetBalance with their tokens) and, if the server
still knows them, skips the setup. A measured run shorter than 2 s is
flagged in the summary: at -n 500 and c=20 the rates measure the start
(connections, caches), not the steady state; prefer --duration 10s or more.

Transfer pays a random amount (1..--amount-max) to a random friend of the
caller, with a new request_id each time; GetMessages reads the caller's
conversation with a random friend; the other calls read the caller's own
data (GetHistory: the newest 20 items).

The summary ends with an informational verdict against its target (Transfer
≥ 10,000 rps, reads ≥ 20,000 rps each, at c=20). The exit status is 1 only
if setup failed or more than 1% of calls failed.`,
		Example: `  surge bench wallet --call Transfer -n 500 -c 20
  surge bench wallet --api vmr --call GetBalance -n 500 -c 20
  surge bench wallet --call GetBalance -c 20 --duration 30s
  surge bench wallet --call GetChatFriendList -c 20 --duration 30s --out chat.json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchScenario(cmd, &opts, func(cmd *cobra.Command) (*report.Result, error) {
				if cfg.Duration > 0 {
					cfg.Iterations = 0 // as with ghz, a duration wins over -n
				}
				cfg.Log = cmd.ErrOrStderr()
				return wallet.RunWallet(cmd.Context(), cfg)
			})
		},
	}
	fs := cmd.Flags()
	addTargetFlag(fs, &cfg.Target, " (http://; gRPC runs over HTTP/2 without TLS)")
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "API key for the ledger route that funds the wallets (needed when surge runs with --api-key)")
	fs.StringVar(&cfg.API, "api", cfg.API, "API to call on the same users: surge (surge.wallet.v1) or vmr (VMR chat's vmr.* services, report 001's own; no GetMessages, Transfer checks the password and pays at least 1000)")
	fs.StringVar(&cfg.Call, "call", cfg.Call, "RPC to call: "+strings.Join(wallet.WalletCalls, ", "))
	fs.Int64VarP(&cfg.Iterations, "total", "n", cfg.Iterations, "number of calls to make in all (ghz's -n)")
	fs.IntVarP(&cfg.VUs, "concurrency", "c", cfg.VUs, "number of callers, each with one call in flight (ghz's -c)")
	fs.DurationVarP(&cfg.Duration, "duration", "z", cfg.Duration, "call for this long instead of -n calls (ghz's -z)")
	fs.IntVar(&cfg.Connections, "connections", cfg.Connections, "HTTP/2 connections the callers share (ghz's --connections)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "call this long before measuring (not counted)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest wait for a reply before the call counts as failed (DeadlineExceeded)")
	addWalletSetupFlags(fs, &cfg)
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the random users and amounts; 0 picks one (reported)")
	addRunFlags(fs, &cfg.Common, &opts)
	bench.DocumentEnv(fs, bench.EnvPrefix)
	return cmd
}

// addWalletSetupFlags defines the flags of the users' setup.
func addWalletSetupFlags(fs *pflag.FlagSet, cfg *wallet.WalletConfig) {
	fs.IntVar(&cfg.Users, "users", cfg.Users, "number of users")
	fs.IntVar(&cfg.Friends, "friends", cfg.Friends, "friends per user (even)")
	fs.Int64Var(&cfg.Fund, "fund", cfg.Fund, "balance of each wallet from @world at setup, in minor units")
	fs.Int64Var(&cfg.AmountMax, "amount-max", cfg.AmountMax, "largest Transfer amount; amounts are uniform in 1..amount-max")
	fs.StringVar(&cfg.UserPrefix, "user-prefix", cfg.UserPrefix, "usernames are this prefix and a number")
	fs.StringVar(&cfg.UsersCache, "users-cache", cfg.UsersCache,
		"file keeping the users and their tokens for the next run with the same settings against the same server, which then skips the setup; 'auto': in the user's cache directory; 'off': none")
}
