package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Setup sizing: account creation is one request per account (there is no
// batch route for it), so it runs wide: the more requests in flight, the
// more the server's group commit puts in each fsync (on a loaded 2-core
// machine 50,000 accounts took 5.0 s with 64 workers, 3.2 s with 256).
// Funding rides the batch route, a few thousand transfers a request.
const (
	setupWorkers  = 256
	fundBatch     = 4096
	fundWorkers   = 4
	verifySample  = 32
	setupRetries  = 8
	setupBackoff0 = 50 * time.Millisecond
)

// setupTransferAccounts creates and funds the accounts unless cfg.NoSetup,
// then checks a sample of them either way.
func setupTransferAccounts(ctx context.Context, c *HTTPClient, cfg TransferConfig, log *Progress) error {
	if !cfg.NoSetup {
		t0 := time.Now()
		if err := createAccounts(ctx, c, cfg); err != nil {
			return err
		}
		t1 := time.Now()
		log.Printf("setup: %s accounts ready in %s", thousands(int64(cfg.Accounts)), k6Duration(t1.Sub(t0)))
		if err := fundAccounts(ctx, c, cfg); err != nil {
			return err
		}
		log.Printf("setup: %s accounts funded with %s each from @world in %s",
			thousands(int64(cfg.Accounts)), thousands(cfg.Fund), k6Duration(time.Since(t1)))
	}
	return verifyAccounts(ctx, c, cfg)
}

// createAccounts opens every account; one that already exists with the
// same attributes (200) is fine, so setup can be repeated.
func createAccounts(ctx context.Context, c *HTTPClient, cfg TransferConfig) error {
	return forEach(ctx, setupWorkers, cfg.Accounts, func(ctx context.Context) (func(int) error, func()) {
		ep := c.Endpoint(ctx, http.MethodPost, "/v1/accounts")
		return func(i int) error {
			body := fmt.Appendf(ep.Body(), `{"id":%q,"currency":%q}`, cfg.accountID(i), cfg.Currency)
			status, reply, err := sendRetrying(ctx, ep, body)
			if err != nil {
				return fmt.Errorf("bench: creating account %s: %w", cfg.accountID(i), err)
			}
			if status != http.StatusCreated && status != http.StatusOK {
				return fmt.Errorf("bench: creating account %s: %s: %s", cfg.accountID(i), StatusKey(status, reply), ProblemDetail(reply))
			}
			return nil
		}, ep.Close
	})
}

// fundAccounts moves cfg.Fund from @world to every account in batches.
// Funding transfer ids name the account and the amount, so repeating setup
// with the same --fund replays them instead of paying twice.
func fundAccounts(ctx context.Context, c *HTTPClient, cfg TransferConfig) error {
	chunks := (cfg.Accounts + fundBatch - 1) / fundBatch
	return forEach(ctx, fundWorkers, chunks, func(ctx context.Context) (func(int) error, func()) {
		ep := c.Endpoint(ctx, http.MethodPost, "/v1/transfers/batch")
		return func(chunk int) error {
			lo, hi := chunk*fundBatch, min((chunk+1)*fundBatch, cfg.Accounts)
			status, reply, err := sendRetrying(ctx, ep, appendFunding(ep.Body(), cfg, lo, hi))
			if err != nil {
				return fmt.Errorf("bench: funding accounts: %w", err)
			}
			if status != http.StatusOK {
				return fmt.Errorf("bench: funding accounts: %s: %s", StatusKey(status, reply), ProblemDetail(reply))
			}
			failed, reasons, ok := judgeBatch(reply, hi-lo)
			switch {
			case !ok:
				return fmt.Errorf("bench: funding accounts: malformed batch reply: %s", ProblemDetail(reply))
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
func verifyAccounts(ctx context.Context, c *HTTPClient, cfg TransferConfig) error {
	r := rand.New(rand.NewPCG(cfg.Seed, 0))
	sample := []int{0, cfg.Accounts - 1}
	for range min(verifySample, cfg.Accounts) {
		sample = append(sample, r.IntN(cfg.Accounts))
	}
	for _, i := range sample {
		if err := verifyAccount(ctx, c, cfg, cfg.accountID(i)); err != nil {
			return err
		}
	}
	return nil
}

func verifyAccount(ctx context.Context, c *HTTPClient, cfg TransferConfig, id string) error {
	status, reply, err := c.Do(ctx, http.MethodGet, "/v1/accounts/"+id, nil)
	if err != nil {
		return fmt.Errorf("bench: checking account %s: %w", id, err)
	}
	if status != http.StatusOK {
		hint := ""
		if cfg.NoSetup {
			hint = " (run once without --no-setup to create the accounts)"
		}
		return fmt.Errorf("bench: checking account %s: %s%s", id, StatusKey(status, reply), hint)
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
		return fmt.Errorf("bench: account %s has %d available, less than --amount-max %d: raise --fund",
			id, acct.Available, cfg.AmountMax)
	}
	return nil
}

// sendRetrying sends body, retrying with backoff while the server sheds
// load (429, 503): setup is a client like any other and should back off.
func sendRetrying(ctx context.Context, ep *Endpoint, body []byte) (int, []byte, error) {
	wait := setupBackoff0
	for attempt := 0; ; attempt++ {
		status, reply, err := ep.Send(body)
		if err != nil || (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) || attempt == setupRetries {
			return status, reply, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, nil, ctx.Err()
		}
		wait *= 2
	}
}

// forEach calls a worker function for every i in [0, n), spread over
// workers goroutines, each of which makes its own function (and so its own
// Endpoint) with newWorker, and calls the done function newWorker returned
// with it when it stops (to close the Endpoint, so that the VUs can reuse
// its connection). The first error stops the rest.
func forEach(ctx context.Context, workers, n int, newWorker func(context.Context) (do func(int) error, done func())) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do, done := newWorker(ctx)
			defer done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}
