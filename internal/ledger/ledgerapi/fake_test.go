package ledgerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// fakeLedger records what the transport asks of it and answers from canned
// values. It only checks the transport's mapping; the real engine has its
// own tests.
type fakeLedger struct {
	mu    sync.Mutex
	calls []string

	// Arguments of the last calls.
	spec    ledger.AccountSpec
	id      string
	req     ledger.TransferRequest
	reqs    []ledger.TransferRequest
	atomic  bool
	amount  int64
	query   ledger.HistoryQuery
	account string

	// err, if set, is what every method returns.
	err error
	// created and replayed are the flags CreateAccount and Transfer return.
	created, replayed bool
	// batch, if set, answers TransferBatch; by default every item succeeds.
	batch func(reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error)
	// panics makes every method panic.
	panics bool
}

var fakeTime = time.Date(2026, 11, 22, 5, 30, 0, 123456789, time.UTC)

// record notes a call to name, storing its arguments with set.
func (f *fakeLedger) record(name string, set func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	set()
	if f.panics {
		panic("fake ledger panic")
	}
	return f.err
}

func (f *fakeLedger) ncalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeLedger) CreateAccount(_ context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	if err := f.record("CreateAccount", func() { f.spec = spec }); err != nil {
		return ledger.Account{}, false, err
	}
	return ledger.Account{ID: spec.ID, Currency: spec.Currency, OverdraftLimit: spec.OverdraftLimit,
		Metadata: spec.Metadata, CreatedAt: fakeTime}, f.created, nil
}

func (f *fakeLedger) Account(_ context.Context, id string) (ledger.Account, error) {
	if err := f.record("Account", func() { f.id = id }); err != nil {
		return ledger.Account{}, err
	}
	return ledger.Account{ID: id, Currency: "USD", Balance: 100, Pending: 25, Entries: 3,
		Metadata: map[string]string{"tier": "gold", "a": "<&>"}, CreatedAt: fakeTime}, nil
}

// transferOf is the transfer the fake makes of req.
func transferOf(req ledger.TransferRequest) ledger.Transfer {
	t := ledger.Transfer{ID: req.ID, From: req.From, To: req.To, Amount: req.Amount, Currency: req.Currency,
		Memo: req.Memo, State: ledger.StatePosted, TwoPhase: req.Pending, Timeout: req.Timeout,
		PostedAmount: req.Amount, CreatedAt: fakeTime, UpdatedAt: fakeTime}
	if t.ID == "" {
		t.ID = "srv-1"
	}
	if t.Currency == "" {
		t.Currency = "USD"
	}
	if req.Pending {
		t.State, t.PostedAmount = ledger.StatePending, 0
	}
	return t
}

// TransferWith ignores the attached records: the HTTP transport never
// sends any.
func (f *fakeLedger) TransferWith(ctx context.Context, req ledger.TransferRequest, _ []store.Record) (ledger.Transfer, bool, error) {
	return f.Transfer(ctx, req)
}

func (f *fakeLedger) Transfer(_ context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	if err := f.record("Transfer", func() { f.req = req }); err != nil {
		return ledger.Transfer{}, false, err
	}
	return transferOf(req), f.replayed, nil
}

func (f *fakeLedger) TransferBatch(_ context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	if err := f.record("TransferBatch", func() { f.reqs, f.atomic = reqs, atomic }); err != nil {
		return nil, err
	}
	if f.batch != nil {
		return f.batch(reqs, atomic)
	}
	out := make([]ledger.BatchResult, len(reqs))
	for i, r := range reqs {
		out[i].Transfer = transferOf(r)
	}
	return out, nil
}

func (f *fakeLedger) PostPending(_ context.Context, id string, amount int64) (ledger.Transfer, error) {
	if err := f.record("PostPending", func() { f.id, f.amount = id, amount }); err != nil {
		return ledger.Transfer{}, err
	}
	return ledger.Transfer{ID: id, From: "a", To: "b", Amount: 100, Currency: "USD", State: ledger.StatePosted,
		TwoPhase: true, Timeout: time.Minute, PostedAmount: amount, CreatedAt: fakeTime, UpdatedAt: fakeTime}, nil
}

func (f *fakeLedger) VoidPending(_ context.Context, id string) (ledger.Transfer, error) {
	if err := f.record("VoidPending", func() { f.id = id }); err != nil {
		return ledger.Transfer{}, err
	}
	return ledger.Transfer{ID: id, From: "a", To: "b", Amount: 100, Currency: "USD", State: ledger.StateVoided,
		TwoPhase: true, CreatedAt: fakeTime, UpdatedAt: fakeTime}, nil
}

func (f *fakeLedger) GetTransfer(_ context.Context, id string) (ledger.Transfer, error) {
	if err := f.record("GetTransfer", func() { f.id = id }); err != nil {
		return ledger.Transfer{}, err
	}
	return transferOf(ledger.TransferRequest{ID: id, From: "a", To: "b", Amount: 7, Memo: "line\nbreak \"q\""}), nil
}

func (f *fakeLedger) History(_ context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	if err := f.record("History", func() { f.account, f.query = accountID, q }); err != nil {
		return ledger.HistoryPage{}, err
	}
	return ledger.HistoryPage{Entries: []ledger.Entry{
		{Seq: 3, TransferID: "t-9", Direction: ledger.Debit, Amount: 25, BalanceAfter: 75, Counterpart: "bob", At: fakeTime},
		{Seq: 2, TransferID: "t-8", Direction: ledger.Credit, Amount: 100, BalanceAfter: 100, Counterpart: "@world", Memo: "m", At: fakeTime},
	}, NextCursor: 2}, nil
}

func (f *fakeLedger) Stats(context.Context) (ledger.Stats, error) {
	if err := f.record("Stats", func() {}); err != nil {
		return ledger.Stats{}, err
	}
	return ledger.Stats{Accounts: 2, BalanceSum: map[string]int64{"USD": 0, "EUR": 0}}, nil
}

// testAPI is an API over a fake ledger, with what the tests look at.
type testAPI struct {
	*API
	fake *fakeLedger
	reg  *prometheus.Registry
	logs *bytes.Buffer
}

func newTestAPI(t testing.TB, key string) *testAPI {
	t.Helper()
	ta := &testAPI{fake: &fakeLedger{created: true}, reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	ta.API = New(ta.fake, Options{APIKey: key, Registry: ta.reg,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{w: ta.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return ta
}

// lockedWriter serialises writes to a buffer shared by handlers.
type lockedWriter struct {
	w io.Writer
}

var logMu sync.Mutex

func (l lockedWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return l.w.Write(p)
}

// do sends one request through the handler. ct "" sends no Content-Type.
func (ta *testAPI) do(method, target, ct, body string, hdr ...string) *httptest.ResponseRecorder {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
	}
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, r)
	return w
}

// problemBody is an RFC 9457 problem as a client decodes it.
type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// wantProblem checks that w is a well-formed problem with status and code,
// and returns it.
func wantProblem(t testing.TB, w *httptest.ResponseRecorder, status int, code string) problemBody {
	t.Helper()
	var p problemBody
	if w.Code != status {
		t.Errorf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json; body %s", ct, w.Body)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	if p.Code != code || p.Status != status || p.Type != "https://surge.dev/problems/"+code || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v, want status %d code %s with type, title and detail", p, status, code)
	}
	return p
}

// decodeJSON decodes w's body into v, refusing unknown fields.
func decodeJSON(t testing.TB, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
