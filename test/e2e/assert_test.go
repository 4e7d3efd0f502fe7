package e2e

import (
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

// currency is the server's default currency, that of @world.
const currency = "USD"

// world is the system account money comes from.
const world = "@world"

// want checks that a request got status and, when code is not empty, that
// the answer is a problem document carrying code. It reports a mismatch
// with t.Errorf (so it is safe in any goroutine) and returns whether all
// matched.
func want(t testing.TB, r *Response, err error, status int, code string) bool {
	t.Helper()
	if !wantStatus(t, r, err, status) {
		return false
	}
	if status < 400 {
		return true
	}
	ok := true
	if !isProblemJSON(r) {
		t.Errorf("error answer is not application/problem+json (Content-Type %q): %s", r.Header.Get("Content-Type"), r)
		ok = false
	}
	if r.Problem.Status != status {
		t.Errorf("problem status %d, want %d: %s", r.Problem.Status, status, r)
		ok = false
	}
	if code != "" && r.Problem.Code != code {
		t.Errorf("want code %q, got %q: %s", code, r.Problem.Code, r)
		ok = false
	}
	return ok
}

// wantStatus checks only that a request got an answer with status.
func wantStatus(t testing.TB, r *Response, err error, status int) bool {
	t.Helper()
	if err != nil {
		t.Errorf("request failed: %v", err)
		return false
	}
	if r.Status != status {
		t.Errorf("want status %d, got: %s", status, r)
		return false
	}
	return true
}

// must is want that stops the test on a mismatch; call it only from the
// test's own goroutine.
func must(t testing.TB, r *Response, err error, status int, code string) {
	t.Helper()
	if !want(t, r, err, status, code) {
		t.FailNow()
	}
}

// mustCreateAccount opens a new account and expects 201.
func mustCreateAccount(t testing.TB, c *Client, a NewAccount) Account {
	t.Helper()
	got, r, err := c.CreateAccount(a)
	must(t, r, err, http.StatusCreated, "")
	return got
}

// openAccounts opens plain USD accounts with the given ids, expecting 201
// for each.
func openAccounts(t testing.TB, c *Client, ids ...string) {
	t.Helper()
	for _, id := range ids {
		mustCreateAccount(t, c, NewAccount{ID: id, Currency: currency})
	}
}

// mustTransfer makes a transfer and expects 201.
func mustTransfer(t testing.TB, c *Client, req TransferReq) Transfer {
	t.Helper()
	got, r, err := c.Transfer(req)
	must(t, r, err, http.StatusCreated, "")
	return got
}

// fund moves amount from @world to id.
func fund(t testing.TB, c *Client, id string, amount int64) {
	t.Helper()
	mustTransfer(t, c, TransferReq{From: world, To: id, Amount: amount})
}

// mustAccount reads an account and expects 200.
func mustAccount(t testing.TB, c *Client, id string) Account {
	t.Helper()
	got, r, err := c.Account(id)
	must(t, r, err, http.StatusOK, "")
	return got
}

// mustGetTransfer reads a transfer and expects 200.
func mustGetTransfer(t testing.TB, c *Client, id string) Transfer {
	t.Helper()
	got, r, err := c.GetTransfer(id)
	must(t, r, err, http.StatusOK, "")
	return got
}

// mustStats reads the ledger totals and expects 200.
func mustStats(t testing.TB, c *Client) Stats {
	t.Helper()
	got, r, err := c.Stats()
	must(t, r, err, http.StatusOK, "")
	return got
}

// mustHistory reads the whole history of an account by cursor.
func mustHistory(t testing.TB, c *Client, id string) []Entry {
	t.Helper()
	h, err := c.History(id, 1000)
	if err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	return h
}

// wantBalance checks an account's balance and pending hold, and that
// available is their difference.
func wantBalance(t testing.TB, c *Client, id string, balance, pending int64) {
	t.Helper()
	a := mustAccount(t, c, id)
	if a.Balance != balance || a.Pending != pending || a.Available != balance-pending {
		t.Errorf("%s: balance/pending/available = %d/%d/%d, want %d/%d/%d",
			id, a.Balance, a.Pending, a.Available, balance, pending, balance-pending)
	}
}

// wantConserved checks that the balances of currency sum to 0.
func wantConserved(t testing.TB, c *Client) Stats {
	t.Helper()
	s := mustStats(t, c)
	if s.BalanceSum[currency] != 0 {
		t.Errorf("stats: balance_sum=%v, want %s:0", s.BalanceSum, currency)
	}
	return s
}

// wantTransferNotFound checks that no transfer has id.
func wantTransferNotFound(t testing.TB, c *Client, id string) {
	t.Helper()
	_, r, err := c.GetTransfer(id)
	want(t, r, err, http.StatusNotFound, "transfer_not_found")
}

// snapshot is the observable state of some accounts and of the ledger
// totals, to check that a failed request changed nothing.
type snapshot struct {
	stats    Stats
	accounts map[string]Account
}

// takeSnapshot reads the totals and the given accounts.
func takeSnapshot(t testing.TB, c *Client, ids ...string) snapshot {
	t.Helper()
	s := snapshot{stats: mustStats(t, c), accounts: map[string]Account{}}
	for _, id := range ids {
		s.accounts[id] = mustAccount(t, c, id)
	}
	return s
}

// wantUnchanged checks that the totals and the snapshot's accounts are as
// they were.
func (s snapshot) wantUnchanged(t testing.TB, c *Client) {
	t.Helper()
	if now := mustStats(t, c); !reflect.DeepEqual(now, s.stats) {
		t.Errorf("ledger stats changed: was %+v, now %+v", s.stats, now)
	}
	for id, was := range s.accounts {
		if now := mustAccount(t, c, id); !reflect.DeepEqual(now, was) {
			t.Errorf("account %s changed: was %+v, now %+v", id, was, now)
		}
	}
}

// parseTime parses an API time (RFC 3339, UTC) or reports why it cannot.
func parseTime(t testing.TB, what, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Errorf("%s: %q is not RFC 3339: %v", what, s, err)
		return time.Time{}
	}
	if _, off := ts.Zone(); off != 0 {
		t.Errorf("%s: %q is not UTC", what, s)
	}
	return ts
}

// newRand returns a random source seeded from E2E_SEED or the clock, and
// logs the seed so that a failing run can be repeated.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("E2E_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("random seed %d (set E2E_SEED to repeat)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// parallel runs fn(i) for i in [0, n) on up to workers goroutines and
// waits for all. fn must report failures with t.Errorf, not t.Fatalf.
func parallel(workers, n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// skipIfShort skips a long test under `go test -short`.
func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long end-to-end test; skipped with -short")
	}
}
