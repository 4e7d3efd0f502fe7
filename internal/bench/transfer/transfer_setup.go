package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Setup sizing: account creation is one request per account (there is no
// batch route for it), so it runs wide: the more requests in flight, the
// more the server's group commit puts in each fsync (on a loaded 2-core
// machine 50,000 accounts took 5.0 s with 64 workers, 3.2 s with 256).
// Funding rides the batch route, a few thousand transfers a request
// (FundBatch, by FundWorkers at once, for the wallet's setup too).
const (
	setupWorkers = 256
	FundBatch    = 4096
	FundWorkers  = 4
	verifySample = 32
)

// setupTransferAccounts creates and funds the accounts unless cfg.NoSetup,
// then checks a sample of them either way.
func setupTransferAccounts(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig, log *report.Progress) error {
	if !cfg.NoSetup {
		t0 := time.Now()
		if err := createAccounts(ctx, c, cfg); err != nil {
			return err
		}
		t1 := time.Now()
		log.Printf("setup: %s accounts ready in %s", units.Thousands(int64(cfg.Accounts)), units.K6Duration(t1.Sub(t0)))
		if err := fundAccounts(ctx, c, cfg); err != nil {
			return err
		}
		log.Printf("setup: %s accounts funded with %s each from @world in %s",
			units.Thousands(int64(cfg.Accounts)), units.Thousands(cfg.Fund), units.K6Duration(time.Since(t1)))
	}
	return verifyAccounts(ctx, c, cfg)
}

// creditsWait bounds how long setup waits for a cluster's forwarded
// credits to land before it checks the accounts.
const creditsWait = 30 * time.Second

// awaitCredits waits until the ledger reports no credits in flight. In a
// cluster a funding transfer is answered once its debit committed; the
// credit to an account of another partition is applied in a later round,
// so an account read at once may not show it yet. A single process
// reports no credits_in_flight and returns at once.
func awaitCredits(ctx context.Context, c *httpc.HTTPClient) error {
	ctx, cancel := context.WithTimeout(ctx, creditsWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		status, reply, err := c.Do(ctx, http.MethodGet, "/v1/ledger/stats", nil)
		if err != nil {
			return fmt.Errorf("bench: reading ledger stats: %w", err)
		}
		var stats struct {
			CreditsInFlight map[string]int64 `json:"credits_in_flight"`
		}
		if status != http.StatusOK || json.Unmarshal(reply, &stats) != nil {
			return fmt.Errorf("bench: reading ledger stats: %s", httpc.StatusKey(status, reply))
		}
		if !creditsPending(stats.CreditsInFlight) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // verifyAccounts names an account still short
		case <-tick.C:
		}
	}
}

func creditsPending(inFlight map[string]int64) bool {
	for _, v := range inFlight {
		if v != 0 {
			return true
		}
	}
	return false
}

// createAccounts opens every account; one that already exists with the
// same attributes (200) is fine, so setup can be repeated.
func createAccounts(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig) error {
	return bench.CreateAccounts(ctx, c, setupWorkers, cfg.Accounts, func(b []byte, i int) ([]byte, string) {
		return fmt.Appendf(b, `{"id":%q,"currency":%q}`, cfg.accountID(i), cfg.Currency), cfg.accountID(i)
	})
}

// fundAccounts moves cfg.Fund from @world to every account in batches.
// Funding transfer ids name the account and the amount, so repeating setup
// with the same --fund replays them instead of paying twice.
func fundAccounts(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig) error {
	chunks := (cfg.Accounts + FundBatch - 1) / FundBatch
	return bench.ForEach(ctx, FundWorkers, chunks, func(ctx context.Context) (func(int) error, func()) {
		ep := c.Endpoint(ctx, http.MethodPost, "/v1/transfers/batch")
		return func(chunk int) error {
			lo, hi := chunk*FundBatch, min((chunk+1)*FundBatch, cfg.Accounts)
			status, reply, err := bench.SendRetrying(ctx, ep, appendFunding(ep.Body(), cfg, lo, hi))
			if err != nil {
				return fmt.Errorf("bench: funding accounts: %w", err)
			}
			if status != http.StatusOK {
				return fmt.Errorf("bench: funding accounts: %s: %s", httpc.StatusKey(status, reply), httpc.ProblemDetail(reply))
			}
			failed, reasons, ok := JudgeBatch(reply, hi-lo)
			switch {
			case !ok:
				return fmt.Errorf("bench: funding accounts: malformed batch reply: %s", httpc.ProblemDetail(reply))
			case failed > 0:
				return fmt.Errorf("bench: funding accounts: %d of %d transfers failed, e.g. %s: %s",
					failed, hi-lo, reasons[0].key, reasons[0].detail)
			}
			return nil
		}, ep.Close
	})
}

func appendFunding(b []byte, cfg TransferConfig, lo, hi int) []byte {
	fund := strconv.FormatInt(cfg.Fund, 10)
	b = append(b, `{"transfers":[`...)
	for i := lo; i < hi; i++ {
		if i > lo {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"id":"%sfund-%s-%d","from":"@world","to":%q,"amount":%s}`,
			cfg.AccountPrefix, fund, i, cfg.accountID(i), fund)
	}
	return append(b, "]}"...)
}

// verifyAccounts reads back the first, the last and a random sample of the
// accounts and checks that each exists in the right currency with enough
// money for the largest transfer.
func verifyAccounts(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig) error {
	r := rand.New(rand.NewPCG(cfg.Seed, 0))
	sample := []int{0, cfg.Accounts - 1}
	for range min(verifySample, cfg.Accounts) {
		sample = append(sample, r.IntN(cfg.Accounts))
	}
	for _, i := range sample {
		err := verifyAccount(ctx, c, cfg, cfg.accountID(i))
		if errors.Is(err, errShort) { // its funding credit may still be on its way
			if err := awaitCredits(ctx, c); err != nil {
				return err
			}
			err = verifyAccount(ctx, c, cfg, cfg.accountID(i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// errShort marks an account with less than --amount-max available.
var errShort = errors.New("less than --amount-max")

func verifyAccount(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig, id string) error {
	status, reply, err := c.Do(ctx, http.MethodGet, "/v1/accounts/"+id, nil)
	if err != nil {
		return fmt.Errorf("bench: checking account %s: %w", id, err)
	}
	if status != http.StatusOK {
		hint := ""
		if cfg.NoSetup {
			hint = " (run once without --no-setup to create the accounts)"
		}
		return fmt.Errorf("bench: checking account %s: %s%s", id, httpc.StatusKey(status, reply), hint)
	}
	var acct struct {
		Currency  string `json:"currency"`
		Available int64  `json:"available"`
	}
	if err := json.Unmarshal(reply, &acct); err != nil {
		return fmt.Errorf("bench: checking account %s: %w", id, err)
	}
	if acct.Currency != cfg.Currency {
		return fmt.Errorf("bench: account %s is in %s, not %s", id, acct.Currency, cfg.Currency)
	}
	if acct.Available < cfg.AmountMax {
		return fmt.Errorf("bench: account %s has %d available, %w %d: raise --fund",
			id, acct.Available, errShort, cfg.AmountMax)
	}
	return nil
}
