package ledgerapi

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// transferReply is a transfer as a client decodes it.
type transferReply struct {
	ID           string `json:"id"`
	From         string `json:"from"`
	To           string `json:"to"`
	Amount       int64  `json:"amount"`
	Currency     string `json:"currency"`
	Memo         string `json:"memo"`
	State        string `json:"state"`
	Pending      bool   `json:"pending"`
	PostedAmount int64  `json:"posted_amount"`
	TimeoutMS    int64  `json:"timeout_ms"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
	ExpiresAt    string `json:"expires_at"`
}

// accountReply is an account as a client decodes it.
type accountReply struct {
	ID             string            `json:"id"`
	Currency       string            `json:"currency"`
	Balance        int64             `json:"balance"`
	Pending        int64             `json:"pending"`
	Available      int64             `json:"available"`
	OverdraftLimit int64             `json:"overdraft_limit"`
	Metadata       map[string]string `json:"metadata"`
	System         bool              `json:"system"`
	Entries        uint64            `json:"entries"`
	CreatedAt      string            `json:"created_at"`
}

type batchReply struct {
	Results []struct {
		ID     string `json:"id"`
		Status int    `json:"status"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"results"`
}

const fakeTimeText = "2026-11-22T05:30:00.123456789Z"

func TestCreateTransfer(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("POST", "/v1/transfers", "application/json",
		`{"id":"t-1","from":"@world","to":"alice","amount":100,"currency":"USD","memo":"caf\u00e9 \"x\"\n","pending":true,"timeout_ms":1500}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := ledger.TransferRequest{ID: "t-1", From: "@world", To: "alice", Amount: 100, Currency: "USD",
		Memo: "café \"x\"\n", Pending: true, Timeout: 1500 * time.Millisecond}
	if ta.fake.req != want {
		t.Errorf("ledger got %+v, want %+v", ta.fake.req, want)
	}
	var got transferReply
	decodeJSON(t, w, &got)
	wantReply := transferReply{ID: "t-1", From: "@world", To: "alice", Amount: 100, Currency: "USD", Memo: want.Memo,
		State: "pending", Pending: true, TimeoutMS: 1500, CreatedAt: fakeTimeText, UpdatedAt: fakeTimeText,
		ExpiresAt: "2026-11-22T05:30:01.623456789Z"}
	if got != wantReply {
		t.Errorf("reply %+v, want %+v", got, wantReply)
	}
}

func TestCreateTransferMinimal(t *testing.T) {
	ta := newTestAPI(t, "")
	ta.fake.replayed = true
	for _, ct := range []string{"", "application/json", "application/json; charset=UTF-8", "Application/JSON", "application/vnd.surge+json"} {
		body := " {\"from\" : \"a\",\t\"to\":\"b\" ,\"amount\":9007199254740991, \"id\":null, \"memo\":null,\"pending\":false,\"timeout_ms\":0}\r\n"
		w := ta.do("POST", "/v1/transfers", ct, body)
		if w.Code != http.StatusOK { // 200: the fake says it is a replay
			t.Fatalf("Content-Type %q: status %d: %s", ct, w.Code, w.Body)
		}
		want := ledger.TransferRequest{From: "a", To: "b", Amount: ledger.MaxAmount}
		if ta.fake.req != want {
			t.Errorf("ledger got %+v, want %+v", ta.fake.req, want)
		}
		var got transferReply
		decodeJSON(t, w, &got)
		if got.ID != "srv-1" || got.State != "posted" || got.ExpiresAt != "" || got.PostedAmount != ledger.MaxAmount {
			t.Errorf("reply %+v", got)
		}
	}
}

func TestCreateAccount(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("POST", "/v1/accounts", "application/json", `{"id":"alice","currency":"USD","overdraft_limit":50,"metadata":{"tier":"gold","x":""}}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	wantSpec := ledger.AccountSpec{ID: "alice", Currency: "USD", OverdraftLimit: 50, Metadata: map[string]string{"tier": "gold", "x": ""}}
	if !reflect.DeepEqual(ta.fake.spec, wantSpec) {
		t.Errorf("ledger got %+v, want %+v", ta.fake.spec, wantSpec)
	}
	var got accountReply
	decodeJSON(t, w, &got)
	if got.ID != "alice" || got.OverdraftLimit != 50 || got.Metadata["tier"] != "gold" || got.CreatedAt != fakeTimeText {
		t.Errorf("reply %+v", got)
	}

	ta.fake.created = false
	w = ta.do("POST", "/v1/accounts", "", `{"id":"@bank","currency":"EUR","metadata":{}}`)
	if w.Code != http.StatusOK {
		t.Fatalf("existing account: status %d: %s", w.Code, w.Body)
	}
	if wantSpec := (ledger.AccountSpec{ID: "@bank", Currency: "EUR"}); !reflect.DeepEqual(ta.fake.spec, wantSpec) {
		t.Errorf("ledger got %#v, want %#v ({} metadata as nil)", ta.fake.spec, wantSpec)
	}
	var got2 accountReply
	decodeJSON(t, w, &got2)
	if !got2.System || got2.Metadata == nil || len(got2.Metadata) != 0 {
		t.Errorf("reply %+v: want system and metadata {}", got2)
	}
}

func TestGetAccount(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("GET", "/v1/accounts/alice", "", "")
	want := `{"id":"alice","currency":"USD","balance":100,"pending":25,"available":75,"overdraft_limit":0,` +
		`"metadata":{"a":"\u003c\u0026\u003e","tier":"gold"},"system":false,"entries":3,"created_at":"` + fakeTimeText + `"}`
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("got %d %s\nwant %s", w.Code, w.Body, want)
	}
	if ta.fake.id != "alice" {
		t.Errorf("ledger asked for %q", ta.fake.id)
	}
	if cl := w.Header().Get("Content-Length"); cl != fmt.Sprint(len(want)) {
		t.Errorf("Content-Length %s, want %d", cl, len(want))
	}
	w = ta.do("HEAD", "/v1/accounts/@world", "", "")
	if w.Code != 200 || ta.fake.id != "@world" {
		t.Errorf("HEAD: %d, ledger asked for %q", w.Code, ta.fake.id)
	}
}

func TestGetTransfer(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("GET", "/v1/transfers/t:9.x_y-z", "", "")
	var got transferReply
	decodeJSON(t, w, &got)
	if w.Code != 200 || ta.fake.id != "t:9.x_y-z" || got.ID != "t:9.x_y-z" || got.Memo != "line\nbreak \"q\"" {
		t.Errorf("got %d %+v, ledger asked for %q", w.Code, got, ta.fake.id)
	}
	// "batch" is a valid transfer id too; only POST goes to the batch route.
	w = ta.do("GET", "/v1/transfers/batch", "", "")
	if w.Code != 200 || ta.fake.id != "batch" {
		t.Errorf("GET /v1/transfers/batch: %d, ledger asked for %q", w.Code, ta.fake.id)
	}
}

func TestPostAndVoid(t *testing.T) {
	ta := newTestAPI(t, "")
	for _, c := range []struct {
		ct, body string
		amount   int64
	}{
		{"", "", 0}, {"application/json", "", 0}, {"text/plain", "", 0}, {"application/json", "{}", 0},
		{"application/json", `{"amount":null}`, 0}, {"application/json", `{"amount":60}`, 60}, {"", " { \"amount\" : 1 } ", 1},
	} {
		w := ta.do("POST", "/v1/transfers/p-1/post", c.ct, c.body)
		var got transferReply
		decodeJSON(t, w, &got)
		if w.Code != 200 || ta.fake.id != "p-1" || ta.fake.amount != c.amount || got.State != "posted" || got.PostedAmount != c.amount {
			t.Errorf("post %q: %d %+v; ledger got id %q amount %d", c.body, w.Code, got, ta.fake.id, ta.fake.amount)
		}
	}
	for _, body := range []string{"", "{}", " { } "} {
		w := ta.do("POST", "/v1/transfers/p-2/void", "application/json", body)
		var got transferReply
		decodeJSON(t, w, &got)
		if w.Code != 200 || ta.fake.id != "p-2" || got.State != "voided" {
			t.Errorf("void %q: %d %+v", body, w.Code, got)
		}
	}
}

func TestHistory(t *testing.T) {
	ta := newTestAPI(t, "")
	for _, c := range []struct {
		query string
		want  ledger.HistoryQuery
	}{
		{"", ledger.HistoryQuery{Limit: 50}},
		{"limit=10", ledger.HistoryQuery{Limit: 10}},
		{"limit=1000&cursor=18446744073709551615", ledger.HistoryQuery{Limit: 1000, Cursor: 1<<64 - 1}},
		{"offset=100&limit=1", ledger.HistoryQuery{Limit: 1, Offset: 100}},
		{"offset=0", ledger.HistoryQuery{Limit: 50}},
		{"cursor=&limit=5", ledger.HistoryQuery{Limit: 5}},
		{"cursor=&offset=7", ledger.HistoryQuery{Limit: 50, Offset: 7}},
		{"&&limit=%32&", ledger.HistoryQuery{Limit: 2}},
		{"limit=007", ledger.HistoryQuery{Limit: 7}},
	} {
		w := ta.do("GET", "/v1/accounts/alice/transfers?"+c.query, "", "")
		if w.Code != 200 || ta.fake.account != "alice" || ta.fake.query != c.want {
			t.Errorf("%q: %d %s; ledger got %q %+v, want %+v", c.query, w.Code, w.Body, ta.fake.account, ta.fake.query, c.want)
		}
	}
	w := ta.do("GET", "/v1/accounts/alice/transfers", "", "")
	want := `{"items":[{"seq":3,"transfer_id":"t-9","direction":"debit","amount":25,"balance_after":75,"counterpart":"bob","memo":"","created_at":"` + fakeTimeText + `"},` +
		`{"seq":2,"transfer_id":"t-8","direction":"credit","amount":100,"balance_after":100,"counterpart":"@world","memo":"m","created_at":"` + fakeTimeText + `"}],"next_cursor":"2"}`
	if w.Body.String() != want {
		t.Errorf("got  %s\nwant %s", w.Body, want)
	}
}

func TestStats(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("GET", "/v1/ledger/stats", "", "")
	want := `{"accounts":2,"balance_sum":{"EUR":0,"USD":0}}`
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("got %d %s, want %s", w.Code, w.Body, want)
	}
}

// TestLedgerErrors maps every ledger code to its documented status.
func TestLedgerErrors(t *testing.T) {
	for code, status := range map[ledger.Code]int{
		ledger.CodeInvalidArgument: 400, ledger.CodeAccountNotFound: 404, ledger.CodeTransferNotFound: 404,
		ledger.CodeAccountExists: 409, ledger.CodeIdempotencyConflict: 409, ledger.CodeTransferNotPending: 409,
		ledger.CodeInsufficientFunds: 422, ledger.CodeCurrencyMismatch: 422, ledger.CodeSameAccount: 422,
		ledger.CodeExceedsPending: 422, ledger.CodeBatchAborted: 422, ledger.CodeOverloaded: 503,
	} {
		ta := newTestAPI(t, "")
		ta.fake.err = fmt.Errorf("wrapped: %w", ledger.Errorf(code, "detail of %s", code))
		for _, rq := range [][3]string{
			{"POST", "/v1/accounts", `{"id":"a","currency":"USD"}`}, {"GET", "/v1/accounts/a", ""},
			{"GET", "/v1/accounts/a/transfers", ""}, {"POST", "/v1/transfers", `{"from":"a","to":"b","amount":1}`},
			{"POST", "/v1/transfers/batch", `{"transfers":[{"from":"a","to":"b","amount":1}]}`},
			{"GET", "/v1/transfers/t", ""}, {"POST", "/v1/transfers/t/post", ""}, {"POST", "/v1/transfers/t/void", ""},
			{"GET", "/v1/ledger/stats", ""},
		} {
			w := ta.do(rq[0], rq[1], "application/json", rq[2])
			p := wantProblem(t, w, status, string(code))
			if p.Detail != "detail of "+string(code) {
				t.Errorf("%s %s: detail %q", rq[0], rq[1], p.Detail)
			}
			if ra := w.Header().Get("Retry-After"); (code == ledger.CodeOverloaded) != (ra == "1") {
				t.Errorf("%s %s: code %s with Retry-After %q", rq[0], rq[1], code, ra)
			}
		}
	}
}

// TestServerFault: an error that is not a known *ledger.Error, or a panic,
// is a 500 that reveals nothing, and is logged.
func TestServerFault(t *testing.T) {
	for name, err := range map[string]error{
		"plain":        errors.New("pebble: disk on fire at /secret/path"),
		"unknown_code": &ledger.Error{Code: "disk_on_fire", Detail: "/secret/path"},
		"empty_code":   &ledger.Error{Detail: "/secret/path"},
	} {
		ta := newTestAPI(t, "")
		ta.fake.err = err
		w := ta.do("POST", "/v1/transfers", "", `{"from":"a","to":"b","amount":1}`)
		p := wantProblem(t, w, 500, "internal")
		if strings.Contains(w.Body.String(), "secret") || p.Detail != "internal error" {
			t.Errorf("%s: leaked %s", name, w.Body)
		}
		if !strings.Contains(ta.logs.String(), "secret") {
			t.Errorf("%s: not logged: %q", name, ta.logs)
		}
	}
	ta := newTestAPI(t, "")
	ta.fake.panics = true
	w := ta.do("GET", "/v1/ledger/stats", "", "")
	wantProblem(t, w, 500, "internal")
	if !strings.Contains(ta.logs.String(), "fake ledger panic") {
		t.Errorf("panic not logged: %q", ta.logs)
	}
}

func TestBatch(t *testing.T) {
	ta := newTestAPI(t, "")
	ta.fake.batch = func(reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
		out := make([]ledger.BatchResult, len(reqs))
		for i, r := range reqs {
			switch r.Amount {
			case 2:
				out[i] = ledger.BatchResult{Err: ledger.Errorf(ledger.CodeInsufficientFunds, "a has 1")}
			case 3:
				out[i] = ledger.BatchResult{Transfer: transferOf(r), Replayed: true}
			case 4:
				out[i] = ledger.BatchResult{Err: errors.New("secret fault")}
			default:
				out[i] = ledger.BatchResult{Transfer: transferOf(r)}
			}
		}
		return out, nil
	}
	body := `{"transfers":[{"id":"b-1","from":"a","to":"b","amount":1},{"id":"b-2","from":"a","to":"b","amount":2},` +
		`{"from":"c","to":"c","amount":1},{"id":"b-4","from":"a","to":"b","amount":3},{"from":"a","to":"b","amount":1},` +
		`{"id":"b-6","from":"a","to":"b","amount":4}],"atomic":false}`
	w := ta.do("POST", "/v1/transfers/batch", "application/json", body)
	want := `{"results":[{"id":"b-1","status":201},{"id":"b-2","status":422,"code":"insufficient_funds","detail":"a has 1"},` +
		`{"id":"","status":422,"code":"same_account","detail":"from and to are both c"},{"id":"b-4","status":200},{"id":"srv-1","status":201},` +
		`{"id":"b-6","status":500,"code":"internal","detail":"internal error"}]}`
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("got %d %s\nwant %s", w.Code, w.Body, want)
	}
	if len(ta.fake.reqs) != 5 || ta.fake.atomic || ta.fake.reqs[2].ID != "b-4" || ta.fake.reqs[3].ID != "" {
		t.Errorf("ledger got %+v (same_account item must not be sent)", ta.fake.reqs)
	}
	if !strings.Contains(ta.logs.String(), "secret fault") {
		t.Errorf("item fault not logged")
	}
}

func TestBatchAtomic(t *testing.T) {
	ta := newTestAPI(t, "")
	ta.fake.batch = func(reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
		abort := ledger.Errorf(ledger.CodeBatchAborted, "aborted")
		return []ledger.BatchResult{{Err: abort}, {Err: ledger.Errorf(ledger.CodeAccountNotFound, "no x")}}, nil
	}
	w := ta.do("POST", "/v1/transfers/batch", "", `{"atomic":true,"transfers":[{"id":"a-1","from":"a","to":"b","amount":1},{"id":"a-2","from":"a","to":"x","amount":1}]}`)
	var got batchReply
	decodeJSON(t, w, &got)
	if w.Code != 422 || len(got.Results) != 2 || got.Results[0].Code != "batch_aborted" || got.Results[1].Status != 404 || !ta.fake.atomic {
		t.Errorf("got %d %s", w.Code, w.Body)
	}

	// A same_account item fails an atomic batch without reaching the ledger.
	ta = newTestAPI(t, "")
	w = ta.do("POST", "/v1/transfers/batch", "", `{"atomic":true,"transfers":[{"id":"a-1","from":"a","to":"b","amount":1},{"id":"a-2","from":"b","to":"b","amount":1},{"id":"a-3","from":"a","to":"b","amount":1}]}`)
	want := `{"results":[{"id":"a-1","status":422,"code":"batch_aborted","detail":"the atomic batch was not applied because transfers[1] failed"},` +
		`{"id":"a-2","status":422,"code":"same_account","detail":"from and to are both b"},` +
		`{"id":"a-3","status":422,"code":"batch_aborted","detail":"the atomic batch was not applied because transfers[1] failed"}]}`
	if w.Code != 422 || w.Body.String() != want || ta.fake.ncalls() != 0 {
		t.Errorf("got %d %s\nwant %s; %d ledger calls", w.Code, w.Body, want, ta.fake.ncalls())
	}

	// All applied: 200.
	w = ta.do("POST", "/v1/transfers/batch", "", `{"atomic":true,"transfers":[{"id":"a-1","from":"a","to":"b","amount":1}]}`)
	if w.Code != 200 || w.Body.String() != `{"results":[{"id":"a-1","status":201}]}` {
		t.Errorf("got %d %s", w.Code, w.Body)
	}
}

func TestBatchEdges(t *testing.T) {
	ta := newTestAPI(t, "")
	w := ta.do("POST", "/v1/transfers/batch", "", `{"transfers":[]}`)
	if w.Code != 200 || w.Body.String() != `{"results":[]}` || ta.fake.ncalls() != 0 {
		t.Errorf("empty batch: %d %s, %d ledger calls", w.Code, w.Body, ta.fake.ncalls())
	}
	w = ta.do("POST", "/v1/transfers/batch", "", manyItems(ledger.MaxBatch))
	var got batchReply
	decodeJSON(t, w, &got)
	if w.Code != 200 || len(got.Results) != ledger.MaxBatch || len(ta.fake.reqs) != ledger.MaxBatch || ta.fake.reqs[8189].Amount != 8190 {
		t.Errorf("full batch: %d, %d results, %d sent", w.Code, len(got.Results), len(ta.fake.reqs))
	}

	ta.fake.batch = func(reqs []ledger.TransferRequest, _ bool) ([]ledger.BatchResult, error) {
		return make([]ledger.BatchResult, len(reqs)-1), nil
	}
	w = ta.do("POST", "/v1/transfers/batch", "", manyItems(2))
	wantProblem(t, w, 500, "internal")

	ta.fake.batch = func([]ledger.TransferRequest, bool) ([]ledger.BatchResult, error) {
		return nil, ledger.Errorf(ledger.CodeOverloaded, "queues full")
	}
	w = ta.do("POST", "/v1/transfers/batch", "", manyItems(2))
	wantProblem(t, w, 503, "overloaded")
	if w.Header().Get("Retry-After") != "1" {
		t.Errorf("no Retry-After")
	}
}

func TestRouting(t *testing.T) {
	ta := newTestAPI(t, "")
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/nope", 404, "not_found", ""},
		{"GET", "/v1", 404, "not_found", ""},
		{"GET", "/v1/", 404, "not_found", ""},
		{"GET", "/v1/accounts/", 404, "not_found", ""},
		{"GET", "/v1/accounts/a/b/c", 404, "not_found", ""},
		{"POST", "/v1//transfers", 404, "not_found", ""},
		{"POST", "/v1/./transfers", 404, "not_found", ""},
		{"GET", "/v1/accounts/../ledger/stats", 404, "not_found", ""},
		{"GET", "/v1/accounts/a/..", 404, "not_found", ""},
		{"DELETE", "/v1/accounts/a", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/transfers", 405, "method_not_allowed", "POST"},
		{"GET", "/v1/accounts", 405, "method_not_allowed", "POST"},
		{"PUT", "/v1/ledger/stats", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/transfers/t/post", 405, "method_not_allowed", "POST"},
		{"PATCH", "/v1/accounts/a/transfers", 405, "method_not_allowed", "GET, HEAD"},
		{"BREW", "/v1/transfers/batch", 405, "method_not_allowed", "POST"},
	} {
		w := ta.do(c.method, c.path, "", "")
		wantProblem(t, w, c.status, c.code)
		if got := w.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	if w := ta.do("GET", "/nope", "", ""); w.Code != 404 {
		t.Errorf("outside /v1: %d", w.Code)
	}
	if n := ta.fake.ncalls(); n != 0 {
		t.Errorf("ledger called %d times", n)
	}
}

func TestAuth(t *testing.T) {
	ta := newTestAPI(t, "s3cret key")
	ta.SetReady(true)
	for _, hdr := range [][]string{
		nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Bearer s3cret"}, {"Authorization", "Bearer s3cret key "},
		{"Authorization", "Basic s3cret key"}, {"Authorization", "Bearer  s3cret key"}, {"Authorization", "s3cret key"},
		{"Authorization", "Bearer"}, {"Authorization", "Bearer s3cret key", "Authorization", "Bearer s3cret key"},
	} {
		for _, rq := range [][2]string{{"GET", "/v1/accounts/a"}, {"POST", "/v1/transfers"}, {"GET", "/v1/nope"}, {"DELETE", "/v1/accounts/a"}} {
			w := ta.do(rq[0], rq[1], "", `{"from":"a","to":"b","amount":1}`, hdr...)
			wantProblem(t, w, 401, "unauthorized")
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		}
	}
	if n := ta.fake.ncalls(); n != 0 {
		t.Errorf("ledger called %d times without a key", n)
	}
	for _, auth := range []string{"Bearer s3cret key", "bearer s3cret key", "BEARER s3cret key"} {
		if w := ta.do("GET", "/v1/accounts/a", "", "", "Authorization", auth); w.Code != 200 {
			t.Errorf("%q: %d %s", auth, w.Code, w.Body)
		}
	}
	if w := ta.do("GET", "/v1/nope", "", "", "Authorization", "Bearer s3cret key"); w.Code != 404 {
		t.Errorf("authorised unknown route: %d", w.Code)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if w := ta.do("GET", p, "", ""); w.Code != 200 {
			t.Errorf("%s needs no key, got %d", p, w.Code)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	ta := newTestAPI(t, "")
	if w := ta.do("GET", "/healthz", "", ""); w.Code != 200 || w.Body.String() != "ok\n" {
		t.Errorf("healthz: %d %q", w.Code, w.Body)
	}
	for i, ready := range []bool{false, true, false, true} {
		if i > 0 {
			ta.SetReady(ready)
		}
		want := 503
		if ready {
			want = 200
		}
		if w := ta.do("GET", "/readyz", "", ""); w.Code != want {
			t.Errorf("step %d: readyz %d, want %d", i, w.Code, want)
		}
	}
}

func TestMetrics(t *testing.T) {
	ta := newTestAPI(t, "")
	ta.do("GET", "/v1/accounts/alice-secret-id", "", "")
	ta.do("POST", "/v1/transfers", "", `{"from":"a","to":"b","amount":1}`)
	ta.do("POST", "/v1/transfers", "", `{"from":"a","to":"b","amount":0}`)
	ta.do("GET", "/v1/nope/bob-secret", "", "")
	ta.do("BREW", "/v1/accounts", "", "")
	ta.do("POST", "/v1/transfers/batch", "", manyItems(3))
	w := ta.do("GET", "/metrics", "", "")
	text := w.Body.String()
	for _, want := range []string{
		`surge_http_requests_total{code="200",method="GET",route="/v1/accounts/{id}"} 1`,
		`surge_http_requests_total{code="201",method="POST",route="/v1/transfers"} 1`,
		`surge_http_requests_total{code="400",method="POST",route="/v1/transfers"} 1`,
		`surge_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`surge_http_requests_total{code="405",method="OTHER",route="unmatched"} 1`,
		`surge_http_request_duration_seconds_count{method="POST",route="/v1/transfers"} 2`,
		`surge_http_batch_transfers_sum 3`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "secret") {
		t.Errorf("a raw path leaked into the metrics")
	}
	// A second API on the same registry shares the collectors.
	New(&fakeLedger{}, Options{Registry: ta.reg})
}
