package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Overload retries: a 503 "overloaded" answer is retried with the same id
// and body, after a short pause that grows with each attempt.
const (
	overloadRetries = 50
	overloadPause   = 2 * time.Millisecond
)

// load drives random transfers between accounts from many goroutines.
// Transfer ids are chosen by the client and unique: prefix-w<worker>-<n>.
type load struct {
	c         *Client
	accounts  []string
	workers   int
	requests  int   // total requests to send, at most
	maxAmount int64 // amounts are drawn from [1, maxAmount]
	prefix    string
	seed      uint64
	// onAck, when set, is called after each acknowledged transfer with the
	// number acknowledged so far.
	onAck func(acked int64)
}

// loadResult sorts the requests a load sent by what the server answered.
type loadResult struct {
	acked    []TransferReq // 201: the transfer happened
	rejected []TransferReq // a problem answer: nothing happened
	unknown  []TransferReq // no answer: it may or may not have happened
	// unexpected describes answers outside the contract.
	unexpected []string
}

// add merges another worker's result.
func (r *loadResult) add(o loadResult) {
	r.acked = append(r.acked, o.acked...)
	r.rejected = append(r.rejected, o.rejected...)
	r.unknown = append(r.unknown, o.unknown...)
	r.unexpected = append(r.unexpected, o.unexpected...)
}

// run sends the load and returns once every worker has stopped: when the
// requests are used up, or, for each worker, at its first request that got
// no answer (the server is presumed gone).
func (l *load) run() loadResult {
	var (
		next  atomic.Int64
		acked atomic.Int64
		mu    sync.Mutex
		total loadResult
		wg    sync.WaitGroup
	)
	for w := range l.workers {
		wg.Go(func() {
			res := l.worker(w, &next, &acked)
			mu.Lock()
			defer mu.Unlock()
			total.add(res)
		})
	}
	wg.Wait()
	return total
}

// worker is one load goroutine.
func (l *load) worker(w int, next, acked *atomic.Int64) loadResult {
	var res loadResult
	rng := rand.New(rand.NewPCG(l.seed, uint64(w)))
	for n := 0; next.Add(1) <= int64(l.requests); n++ {
		req := l.randomTransfer(rng, l.prefix+"-w"+strconv.Itoa(w)+"-"+strconv.Itoa(n))
		r, err := sendRetrying(l.c, req)
		switch {
		case err != nil:
			res.unknown = append(res.unknown, req)
			return res
		case r.Status == http.StatusCreated:
			res.acked = append(res.acked, req)
			count := acked.Add(1)
			if l.onAck != nil {
				l.onAck(count)
			}
		case r.Status == http.StatusUnprocessableEntity && r.Problem.Code == "insufficient_funds":
			res.rejected = append(res.rejected, req)
		default:
			res.rejected = append(res.rejected, req)
			res.unexpected = append(res.unexpected, r.String())
		}
	}
	return res
}

// randomTransfer draws two distinct accounts and an amount.
func (l *load) randomTransfer(rng *rand.Rand, id string) TransferReq {
	from := rng.IntN(len(l.accounts))
	to := rng.IntN(len(l.accounts) - 1)
	if to >= from {
		to++
	}
	return TransferReq{ID: id, From: l.accounts[from], To: l.accounts[to], Amount: 1 + rng.Int64N(l.maxAmount)}
}

// sendRetrying sends a transfer, retrying with the same id and body while
// the server answers 503 overloaded.
func sendRetrying(c *Client, req TransferReq) (*Response, error) {
	for attempt := 1; ; attempt++ {
		_, r, err := c.Transfer(req)
		if err != nil || r.Status != http.StatusServiceUnavailable || attempt == overloadRetries {
			return r, err
		}
		time.Sleep(time.Duration(attempt) * overloadPause)
	}
}

// ledgerFixture is a set of funded accounts for a load.
type ledgerFixture struct {
	accounts []string      // the load's accounts
	funding  []TransferReq // the transfers from @world that funded them
}

// openFunded opens n accounts named prefix-NNN and funds each with amount
// from @world, with transfer ids fund-<account>.
func openFunded(t testing.TB, c *Client, prefix string, n int, amount int64) ledgerFixture {
	t.Helper()
	f := ledgerFixture{accounts: make([]string, n), funding: make([]TransferReq, n)}
	for i := range n {
		f.accounts[i] = fmt.Sprintf("%s-%03d", prefix, i)
		f.funding[i] = TransferReq{ID: "fund-" + f.accounts[i], From: world, To: f.accounts[i], Amount: amount}
	}
	parallel(16, n, func(i int) {
		_, r, err := c.CreateAccount(NewAccount{ID: f.accounts[i], Currency: currency})
		if !want(t, r, err, http.StatusCreated, "") {
			return
		}
		_, r, err = c.Transfer(f.funding[i])
		want(t, r, err, http.StatusCreated, "")
	})
	if t.Failed() {
		t.FailNow()
	}
	return f
}

// allIDs is every account of the fixture's ledger, @world included.
func (f ledgerFixture) allIDs() []string {
	return append([]string{world}, f.accounts...)
}
