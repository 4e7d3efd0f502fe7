package bench

import (
	"context"
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
