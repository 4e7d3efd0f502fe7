package e2e

import (
	"encoding/json"
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
// Most requests are single transfers; every batchEvery-th request of a
// worker is instead an atomic batch of batchSize transfers. Transfer ids are
// chosen by the client and unique: prefix-w<worker>-<n>[-<item>].
type load struct {
	c          *Client
	accounts   []string
	workers    int
	requests   int   // total requests to send, at most
	maxAmount  int64 // amounts are drawn from [1, maxAmount]
	batchEvery int   // 0: no batches
	prefix     string
	seed       uint64
	// onAck, when set, is called after each acknowledged request with the
	// number of transfers acknowledged so far.
	onAck func(acked int64)
}

// Size of the atomic batches of a load.
const batchSize = 3

// loadResult sorts the transfers a load asked for by what the server
// answered.
type loadResult struct {
	acked    []TransferReq // acknowledged: the transfer happened
	rejected []TransferReq // refused: nothing happened
	// unknown holds the requests that got no answer, each as the transfers
	// it carried: each request happened whole or not at all.
	unknown [][]TransferReq
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
	per := make([]loadResult, l.workers)
	rngs := make([]*rand.Rand, l.workers)
	sent := make([]int, l.workers)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(l.seed, uint64(w)))
	}
	hammer(l.workers, l.requests, l.onAck, func(w, _ int) (acks int, stop bool) {
		n := sent[w]
		sent[w]++
		group := l.randomRequest(rngs[w], fmt.Sprintf("%s-w%d-%d", l.prefix, w, n), n)
		r, err := send(l.c, group)
		if err != nil {
			per[w].unknown = append(per[w].unknown, group)
			return 0, true
		}
		if classify(&per[w], group, r) {
			return len(group), false
		}
		return 0, false
	})
	var total loadResult
	for _, r := range per {
		total.add(r)
	}
	return total
}

// hammer calls do(w, i) for each i in [0, n), spread over workers
// goroutines (w is the caller's number), and returns once all have
// stopped. A worker stops when the indices run out or when do reports
// stop. After a call that acknowledged acks operations, onAck (when set)
// gets the running total.
func hammer(workers, n int, onAck func(int64), do func(w, i int) (acks int, stop bool)) {
	var (
		next, acked atomic.Int64
		wg          sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				acks, stop := do(w, int(i))
				if acks > 0 && onAck != nil {
					onAck(acked.Add(int64(acks)))
				}
				if stop {
					return
				}
			}
		})
	}
	wg.Wait()
}

// randomRequest draws the n-th request of a worker: one transfer with id,
// or an atomic batch of transfers id-0, id-1, ….
func (l *load) randomRequest(rng *rand.Rand, id string, n int) []TransferReq {
	if l.batchEvery == 0 || n%l.batchEvery != l.batchEvery-1 {
		return []TransferReq{l.randomTransfer(rng, id)}
	}
	group := make([]TransferReq, batchSize)
	for i := range group {
		group[i] = l.randomTransfer(rng, id+"-"+strconv.Itoa(i))
	}
	return group
}

// randomTransfer draws two distinct accounts and an amount.
func (l *load) randomTransfer(rng *rand.Rand, id string) TransferReq {
	from, to := randomPair(rng, l.accounts)
	return TransferReq{ID: id, From: from, To: to, Amount: 1 + rng.Int64N(l.maxAmount)}
}

// randomPair draws two distinct accounts.
func randomPair(rng *rand.Rand, accounts []string) (from, to string) {
	i := rng.IntN(len(accounts))
	j := rng.IntN(len(accounts) - 1)
	if j >= i {
		j++
	}
	return accounts[i], accounts[j]
}

// send sends a group (one transfer, or several as an atomic batch),
// retrying while the server answers 503 overloaded.
func send(c *Client, group []TransferReq) (*Response, error) {
	return retryOverloaded(func() (*Response, error) {
		if len(group) == 1 {
			_, r, err := c.Transfer(group[0])
			return r, err
		}
		_, r, err := c.Batch(BatchReq{Atomic: true, Transfers: group})
		return r, err
	})
}

// retryOverloaded calls do, again (the same request) while the server
// answers 503 overloaded, a bounded number of times.
func retryOverloaded(do func() (*Response, error)) (*Response, error) {
	for attempt := 1; ; attempt++ {
		r, err := do()
		if err != nil || r.Status != http.StatusServiceUnavailable || attempt == overloadRetries {
			return r, err
		}
		time.Sleep(time.Duration(attempt) * overloadPause)
	}
}

// classify files a group by the server's answer and reports whether it was
// acknowledged. A single transfer is acknowledged by 201; an atomic batch
// by 200 (all applied). Refusal for lack of funds (422) is expected; any
// other answer is unexpected, and its group counted as refused, since a
// failed request changes nothing.
func classify(res *loadResult, group []TransferReq, r *Response) bool {
	single := len(group) == 1
	switch {
	case single && r.Status == http.StatusCreated, !single && r.Status == http.StatusOK && allCreated(r):
		res.acked = append(res.acked, group...)
		return true
	case single && r.Problem.Code == "insufficient_funds", !single && r.Status == http.StatusUnprocessableEntity:
		res.rejected = append(res.rejected, group...)
	default:
		res.rejected = append(res.rejected, group...)
		res.unexpected = append(res.unexpected, r.String())
	}
	return false
}

// allCreated reports whether every item of a batch reply is 201.
func allCreated(r *Response) bool {
	var reply BatchReply
	if json.Unmarshal(r.Body, &reply) != nil || len(reply.Results) == 0 {
		return false
	}
	for _, it := range reply.Results {
		if it.Status != http.StatusCreated {
			return false
		}
	}
	return true
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
