package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/bench/benchtest"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
)

// fakeLedger is the environment for the load generator under test: the
// few ledger routes the transfer scenario calls, over an in-memory map,
// with failures injected on chosen transfers.
type fakeLedger struct {
	mu        sync.Mutex
	accounts  map[string]int64 // balance by id
	ids       map[string]int   // transfer id → times seen
	transfers int              // transfers seen, in arrival order
	requests  map[string]int   // requests by route pattern
	injected  map[string]int   // failures injected, by "status code"
	// fail, if set, decides the fate of the n-th transfer (from 0):
	// status 0 lets it through.
	fail func(n int) (status int, code string)
	// failTransfer, if set, decides the same from the transfer itself,
	// which (unlike arrival order) a seeded run repeats exactly.
	failTransfer func(fakeTransfer) (status int, code string)
	// pending, if not nil, holds funding credits as a cluster does: the
	// transfer is answered at once and the credit lands later, here when
	// the ledger stats are read after reporting it in flight.
	pending map[string]int64
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{
		accounts: map[string]int64{"@world": 0},
		ids:      map[string]int{},
		requests: map[string]int{},
		injected: map[string]int{},
	}
}

type fakeTransfer struct {
	ID     string `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

func (f *fakeLedger) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { f.count(r) })
	mux.HandleFunc("POST /v1/accounts", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		var a struct{ ID, Currency string }
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.Currency != "USD" {
			t.Errorf("bad account request: %v %+v", err, a)
		}
		f.mu.Lock()
		_, exists := f.accounts[a.ID]
		f.accounts[a.ID] += 0
		f.mu.Unlock()
		benchtest.WriteJSON(w, map[bool]int{true: 200, false: 201}[exists], map[string]any{"id": a.ID, "currency": a.Currency})
	})
	mux.HandleFunc("GET /v1/accounts/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		f.mu.Lock()
		bal, ok := f.accounts[r.PathValue("id")]
		f.mu.Unlock()
		if !ok {
			benchtest.Problem(w, 404, "account_not_found")
			return
		}
		benchtest.WriteJSON(w, 200, map[string]any{"id": r.PathValue("id"), "currency": "USD", "balance": bal, "available": bal})
	})
	mux.HandleFunc("GET /v1/ledger/stats", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		f.mu.Lock()
		defer f.mu.Unlock()
		var inFlight int64
		for id, amount := range f.pending {
			inFlight += amount
			f.accounts[id] += amount
			delete(f.pending, id)
		}
		benchtest.WriteJSON(w, 200, map[string]any{"accounts": len(f.accounts), "credits_in_flight": map[string]int64{"USD": inFlight}})
	})
	mux.HandleFunc("POST /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		var tr fakeTransfer
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			t.Errorf("bad transfer body: %v", err)
		}
		if status, code := f.apply(tr); status != 201 {
			benchtest.Problem(w, status, code)
			return
		}
		benchtest.WriteJSON(w, 201, tr)
	})
	mux.HandleFunc("POST /v1/transfers/batch", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		var b struct{ Transfers []fakeTransfer }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Errorf("bad batch body: %v", err)
		}
		results := make([]map[string]any, 0, len(b.Transfers))
		for _, tr := range b.Transfers {
			item := map[string]any{"id": tr.ID}
			item["status"], item["code"] = f.apply(tr)
			if item["status"] != 201 {
				item["detail"] = "injected"
			}
			results = append(results, item)
		}
		benchtest.WriteJSON(w, 200, map[string]any{"results": results})
	})
	return mux
}

func (f *fakeLedger) count(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.Pattern]++
}

// apply checks and applies one transfer; funding from @world is never
// failed on purpose, other transfers as f.fail says.
func (f *fakeLedger) apply(tr fakeTransfer) (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, fromOK := f.accounts[tr.From]
	_, toOK := f.accounts[tr.To]
	switch {
	case !fromOK || !toOK:
		return 404, "account_not_found"
	case tr.From == tr.To:
		return 422, "same_account"
	case tr.Amount < 1:
		return 400, "invalid_argument"
	}
	f.ids[tr.ID]++
	if tr.From != "@world" {
		n := f.transfers
		f.transfers++
		status, code := 0, ""
		if f.fail != nil {
			status, code = f.fail(n)
		}
		if status == 0 && f.failTransfer != nil {
			status, code = f.failTransfer(tr)
		}
		if status != 0 {
			f.injected[fmt.Sprintf("%d %s", status, code)]++
			return status, code
		}
	}
	f.accounts[tr.From] -= tr.Amount
	if f.pending != nil && tr.From == "@world" {
		f.pending[tr.To] += tr.Amount
		return 201, ""
	}
	f.accounts[tr.To] += tr.Amount
	return 201, ""
}

func testTransferConfig(url string) TransferConfig {
	cfg := DefaultTransferConfig()
	cfg.Target = url
	cfg.Accounts = 20
	cfg.VUs = 4
	cfg.Duration = 0
	cfg.Iterations = 202 // not a multiple of the VUs: two VUs do one more
	cfg.Seed = 7
	return cfg
}

func startFake(t *testing.T) (*fakeLedger, *httptest.Server) {
	f := newFakeLedger()
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	return f, srv
}

// vuCounts returns how many of the ids seen belong to each VU, given ids
// of the form <run id>-<vu>-<n>, and fails on a repeated id.
func vuCounts(t *testing.T, f *fakeLedger, runID string) map[string]int {
	t.Helper()
	per := map[string]int{}
	for id, n := range f.ids {
		if n != 1 {
			t.Errorf("transfer id %s sent %d times", id, n)
		}
		if strings.Contains(id, "fund-") {
			continue
		}
		parts := strings.Split(id, "-")
		if len(parts) != 3 || parts[0] != runID {
			t.Errorf("transfer id %q is not <run id %s>-<vu>-<n>", id, runID)
			continue
		}
		per[parts[1]]++
	}
	return per
}

func TestTransferRunsExactIterationsWithUniqueIDs(t *testing.T) {
	for _, kind := range []httpc.ClientKind{httpc.FastClient, httpc.StdClient, httpc.FastHTTPClient} {
		t.Run(string(kind), func(t *testing.T) { testTransferRunsExactIterations(t, kind) })
	}
}

func testTransferRunsExactIterations(t *testing.T, kind httpc.ClientKind) {
	f, srv := startFake(t)
	cfg := testTransferConfig(srv.URL)
	cfg.Client = kind
	res, err := RunTransfer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Errorf("run failed: %v", err)
	}
	if got := f.requests["POST /v1/transfers"]; got != 202 {
		t.Errorf("server saw %d transfer requests, want 202", got)
	}
	if got := f.requests["POST /v1/accounts"]; got != 20 {
		t.Errorf("server saw %d account creations, want 20", got)
	}
	if got := f.requests["POST /v1/transfers/batch"]; got != 1 {
		t.Errorf("server saw %d funding batches, want 1 (20 accounts)", got)
	}
	if sumBalances(f) != 0 {
		t.Errorf("money created or destroyed: sum of balances %d", sumBalances(f))
	}
	// The first, the last and a sample of 20 (the sample size is capped by
	// the number of accounts) are read back.
	if got := f.requests["GET /v1/accounts/{id}"]; got != 22 {
		t.Errorf("setup read back %d accounts, want 22", got)
	}

	per := vuCounts(t, f, res.Params.Extra["run_id"])
	want := map[string]int{"0": 51, "1": 51, "2": 50, "3": 50}
	if fmt.Sprint(per) != fmt.Sprint(want) {
		t.Errorf("transfers per load.VU %v, want %v", per, want)
	}

	tot := res.Totals
	if tot.Requests != 202 || tot.Iterations != 202 || tot.Failed != 0 || tot.Ops != 202 {
		t.Errorf("totals %+v, want 202 requests, iterations and ops, none failed", tot)
	}
	if tot.BytesSent <= 0 || tot.BytesReceived <= 0 {
		t.Errorf("no bytes counted: sent %d received %d", tot.BytesSent, tot.BytesReceived)
	}
	var inSeries int64
	for _, p := range res.Series {
		inSeries += p.Requests
	}
	if inSeries != 202 {
		t.Errorf("time series holds %d requests, want 202", inSeries)
	}
	if res.Latency.Max <= 0 || res.Latency.Min > res.Latency.Med || res.Latency.Med > res.Latency.Max {
		t.Errorf("implausible latency %+v", res.Latency)
	}

	// What a real run produces survives the trip through --out JSON.
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, res) {
		t.Errorf("JSON round trip changed the result:\n got %+v\nwant %+v", back, res)
	}
}

func sumBalances(f *fakeLedger) int64 {
	var sum int64
	for _, b := range f.accounts {
		sum += b
	}
	return sum
}

func TestTransferCountsFailuresByCode(t *testing.T) {
	f, srv := startFake(t)
	f.fail = func(n int) (int, string) {
		switch {
		case n%5 == 0:
			return 422, "insufficient_funds"
		case n%7 == 0:
			return 503, "overloaded"
		}
		return 0, ""
	}
	res, err := RunTransfer(context.Background(), testTransferConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	// Which transfers fail depends on arrival order, so compare with what
	// the server says it injected.
	want422, want503 := int64(f.injected["422 insufficient_funds"]), int64(f.injected["503 overloaded"])
	if want422 == 0 || want503 == 0 {
		t.Fatalf("nothing injected: %v", f.injected)
	}
	if got := res.Failures["422 insufficient_funds"]; got != want422 {
		t.Errorf("422 failures counted %d, injected %d", got, want422)
	}
	if got := res.Failures["503 overloaded"]; got != want503 {
		t.Errorf("503 failures counted %d, injected %d", got, want503)
	}
	if res.Totals.Failed != want422+want503 || res.Totals.Requests != 202 {
		t.Errorf("totals %+v, want %d failed of 202", res.Totals, want422+want503)
	}
	if ex := res.FailureExamples["422 insufficient_funds"]; ex != "injected insufficient_funds" {
		t.Errorf("example detail %q", ex)
	}
	if res.Err() == nil {
		t.Error("a run with ~30% failures is not reported as failed")
	}
}

func TestTransferBatchCountsItemFailures(t *testing.T) {
	f, srv := startFake(t)
	f.fail = func(n int) (int, string) {
		if n%4 == 0 {
			return 422, "insufficient_funds"
		}
		return 0, ""
	}
	cfg := testTransferConfig(srv.URL)
	cfg.Batch, cfg.Iterations = 25, 10
	res, err := RunTransfer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One funding batch, then ten of 25 transfers.
	if got := f.requests["POST /v1/transfers/batch"]; got != 11 {
		t.Errorf("server saw %d batch requests, want 11", got)
	}
	per := vuCounts(t, f, res.Params.Extra["run_id"])
	if want := map[string]int{"0": 75, "1": 75, "2": 50, "3": 50}; fmt.Sprint(per) != fmt.Sprint(want) {
		t.Errorf("transfers per load.VU %v, want %v", per, want)
	}
	tot := res.Totals
	if tot.Requests != 10 || tot.Failed != 0 || tot.Ops != 250 || tot.OpsName != "transfers" {
		t.Errorf("totals %+v, want 10 requests carrying 250 transfers, no failed request", tot)
	}
	injected := int64(f.injected["422 insufficient_funds"])
	if tot.FailedOps != injected || res.OpFailures["422 insufficient_funds"] != injected || injected != 250/4+1 {
		t.Errorf("failed ops %d (by code %v), injected %d, want 63", tot.FailedOps, res.OpFailures, injected)
	}
}

func TestTransferSetupIsRepeatable(t *testing.T) {
	f, srv := startFake(t)
	cfg := testTransferConfig(srv.URL)
	cfg.Iterations = 4
	for range 2 {
		if _, err := RunTransfer(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	// The second setup found the accounts (200) and replayed the funding:
	// the fake counts an id twice, which vuCounts would flag, so check
	// funding ids directly.
	for id, n := range f.ids {
		if strings.Contains(id, "fund-") && n != 2 {
			t.Errorf("funding %s sent %d times, want once per setup", id, n)
		}
	}
}

// TestTransferSetupWaitsForCreditsInFlight: against a cluster, a funded
// account may show its credit only rounds after the funding was answered;
// setup waits for the ledger to report no credits in flight instead of
// calling the account short.
func TestTransferSetupWaitsForCreditsInFlight(t *testing.T) {
	f := newFakeLedger()
	f.pending = map[string]int64{}
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	cfg := testTransferConfig(srv.URL)
	cfg.Iterations = 4
	if _, err := RunTransfer(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := f.requests["GET /v1/ledger/stats"]; n < 2 {
		t.Errorf("stats read %d times, want until no credit is in flight (2)", n)
	}
}

func TestTransferNoSetupNeedsAccounts(t *testing.T) {
	_, srv := startFake(t)
	cfg := testTransferConfig(srv.URL)
	cfg.NoSetup = true
	_, err := RunTransfer(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "404 account_not_found") {
		t.Errorf("err = %v, want the missing account reported", err)
	}
}

func TestTransferSetupFailureIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		benchtest.Problem(w, 409, "account_exists")
	}))
	defer srv.Close()
	_, err := RunTransfer(context.Background(), testTransferConfig(srv.URL))
	if err == nil || !strings.Contains(err.Error(), "409 account_exists") {
		t.Errorf("err = %v, want the 409 reported", err)
	}
}

func TestTransferUnreachableTarget(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, err := RunTransfer(context.Background(), testTransferConfig(url))
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("err = %v, want the target reported unreachable", err)
	}
}

// TestTransferSameCountsWithBothClients runs the same seeded scenario
// against the fake ledger with each HTTP client: single transfers and
// batches, with failures injected by content (so the same transfers fail
// in both runs). Everything both clients count must come out the same;
// only the bytes differ, since the fast client sends fewer headers.
func TestTransferSameCountsWithBothClients(t *testing.T) {
	type counts struct {
		Server     map[string]int
		Injected   map[string]int
		PerVU      map[string]int
		Totals     report.Totals
		Failures   map[string]int64
		OpFailures map[string]int64
		Examples   map[string]string
	}
	run := func(kind httpc.ClientKind, batch int) counts {
		f, srv := startFake(t)
		f.failTransfer = func(tr fakeTransfer) (int, string) {
			switch {
			case tr.Amount%5 == 0:
				return 422, "insufficient_funds"
			case tr.Amount%7 == 0:
				return 503, "overloaded"
			}
			return 0, ""
		}
		cfg := testTransferConfig(srv.URL)
		cfg.Client, cfg.Batch = kind, batch
		if batch > 0 {
			cfg.Iterations = 10
		}
		res, err := RunTransfer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Params.Extra["http_client"] != string(kind) {
			t.Errorf("params say http_client=%q, want %q", res.Params.Extra["http_client"], kind)
		}
		if res.Totals.BytesSent <= 0 || res.Totals.BytesReceived <= 0 {
			t.Errorf("%s: no bytes counted: %+v", kind, res.Totals)
		}
		tot := res.Totals
		tot.Elapsed, tot.RequestsPerS, tot.OpsPerS, tot.BytesSent, tot.BytesReceived = 0, 0, 0, 0, 0
		return counts{f.requests, f.injected, vuCounts(t, f, res.Params.Extra["run_id"]), tot,
			res.Failures, res.OpFailures, res.FailureExamples}
	}
	for _, batch := range []int{0, 25} {
		std, fast := run(httpc.StdClient, batch), run(httpc.FastClient, batch)
		if !reflect.DeepEqual(std, fast) {
			t.Errorf("batch %d: the clients counted differently:\n std %+v\nfast %+v", batch, std, fast)
		}
		if len(fast.Injected) != 2 || (batch == 0 && len(fast.Failures) != 2) || (batch > 0 && len(fast.OpFailures) != 2) {
			t.Errorf("batch %d: failures not exercised: %+v", batch, fast)
		}
	}
}
