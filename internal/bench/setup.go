package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
)

// setupRetries and setupBackoff0 bound SendRetrying: that many tries, the
// first wait setupBackoff0, doubling.
const (
	setupRetries  = 8
	setupBackoff0 = 50 * time.Millisecond
)

// SendRetrying sends body, retrying with backoff while the server sheds
// load (429, 503): setup is a client like any other and should back off.
func SendRetrying(ctx context.Context, ep *httpc.Endpoint, body []byte) (int, []byte, error) {
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

// ForEach calls a worker function for every i in [0, n), spread over
// workers goroutines, each of which makes its own function (and so its own
// Endpoint) with newWorker, and calls the done function newWorker returned
// with it when it stops (to close the Endpoint, so that the VUs can reuse
// its connection). The first error stops the rest.
func ForEach(ctx context.Context, workers, n int, newWorker func(context.Context) (do func(int) error, done func())) error {
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

// Decimal is a counter kept as ASCII digits, so that appending it to a
// body is a copy rather than a conversion.
type Decimal []byte

// Inc adds one.
func (d *Decimal) Inc() {
	for i := len(*d) - 1; i >= 0; i-- {
		if (*d)[i] < '9' {
			(*d)[i]++
			return
		}
		(*d)[i] = '0'
	}
	*d = append(Decimal{'1'}, *d...)
}

// CreateAccounts opens n ledger accounts over workers connections: body
// appends account i's creation body to b and returns it with the account's
// id. An account that already exists with the same attributes (200) is
// fine, so setup can be repeated.
func CreateAccounts(ctx context.Context, c *httpc.HTTPClient, workers, n int, body func(b []byte, i int) ([]byte, string)) error {
	return ForEach(ctx, workers, n, func(ctx context.Context) (func(int) error, func()) {
		ep := c.Endpoint(ctx, http.MethodPost, "/v1/accounts")
		return func(i int) error {
			b, id := body(ep.Body(), i)
			status, reply, err := SendRetrying(ctx, ep, b)
			if err != nil {
				return fmt.Errorf("bench: creating account %s: %w", id, err)
			}
			if status != http.StatusCreated && status != http.StatusOK {
				return fmt.Errorf("bench: creating account %s: %s: %s", id, httpc.StatusKey(status, reply), httpc.ProblemDetail(reply))
			}
			return nil
		}, ep.Close
	})
}
