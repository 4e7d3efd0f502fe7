package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// badCase is one request the server must refuse.
type badCase struct {
	name        string
	method      string
	path        string
	contentType string // application/json when empty
	body        string
	status      int
	code        string
}

// Body size limits of docs/API.md.
const (
	bodyLimit      = 1 << 20
	batchBodyLimit = 4 << 20
)

// transferBody is a transfer body from bi-g to bi-o with id bi-t and the
// given extra fields (which should include the amount).
func transferBody(extra string) string {
	return `{"id":"bi-t","from":"bi-g","to":"bi-o",` + extra + `}`
}

// padded pads a JSON body with trailing spaces to size bytes: still valid
// JSON, but of that size.
func padded(body string, size int) string {
	return body + strings.Repeat(" ", size-len(body))
}

// badTransfers are refused bodies of POST /v1/transfers.
func badTransfers() []badCase {
	long := strings.Repeat("a", 129)
	cases := []struct{ name, body string }{
		{"malformed", `{"from":"bi-g","to":`},
		{"not_an_object", `[1,2]`},
		{"null", `null`},
		{"empty", ``},
		{"trailing_data", transferBody(`"amount":1`) + `{}`},
		{"unknown_field", transferBody(`"amount":1,"colour":"red"`)},
		{"from_number", `{"id":"bi-t","from":7,"to":"bi-o","amount":1}`},
		{"amount_string", transferBody(`"amount":"1"`)},
		{"amount_zero", transferBody(`"amount":0`)},
		{"amount_negative", transferBody(`"amount":-1`)},
		{"amount_fraction", transferBody(`"amount":1.5`)},
		{"amount_2^53", transferBody(`"amount":9007199254740992`)},
		{"amount_2^63", transferBody(`"amount":9223372036854775808`)},
		{"amount_huge", transferBody(`"amount":100000000000000000000000000000`)},
		{"amount_null", transferBody(`"amount":null`)},
		{"missing_amount", `{"id":"bi-t","from":"bi-g","to":"bi-o"}`},
		{"missing_from", `{"id":"bi-t","to":"bi-o","amount":1}`},
		{"missing_to", `{"id":"bi-t","from":"bi-g","amount":1}`},
		{"pending_string", transferBody(`"amount":1,"pending":"yes"`)},
		{"timeout_negative", transferBody(`"amount":1,"pending":true,"timeout_ms":-1`)},
		{"timeout_over_7_days", transferBody(`"amount":1,"pending":true,"timeout_ms":604800001`)},
		{"memo_too_long", transferBody(`"amount":1,"memo":"` + strings.Repeat("m", 513) + `"`)},
		{"memo_number", transferBody(`"amount":1,"memo":5`)},
		{"memo_invalid_utf8", transferBody(`"amount":1,"memo":"a` + "\xff" + `b"`)},
		{"id_space", `{"id":"bi t","from":"bi-g","to":"bi-o","amount":1}`},
		{"id_too_long", `{"id":"` + long + `","from":"bi-g","to":"bi-o","amount":1}`},
		{"id_invalid_utf8", `{"id":"bi-` + "\xff" + `","from":"bi-g","to":"bi-o","amount":1}`},
	}
	var out []badCase
	for _, c := range cases {
		out = append(out, badCase{name: "transfer_" + c.name, method: http.MethodPost, path: "/v1/transfers", body: c.body, status: 400, code: "invalid_argument"})
	}
	return append(out,
		badCase{name: "transfer_text_plain", method: http.MethodPost, path: "/v1/transfers", contentType: "text/plain", body: transferBody(`"amount":1`), status: 415, code: "unsupported_media_type"},
		badCase{name: "transfer_body_too_large", method: http.MethodPost, path: "/v1/transfers", body: padded(transferBody(`"amount":1`), bodyLimit+1), status: 413, code: "body_too_large"},
	)
}

// badAccounts are refused bodies of POST /v1/accounts.
func badAccounts() []badCase {
	manyKeys := make([]string, 17)
	for i := range manyKeys {
		manyKeys[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	long := strings.Repeat("a", 257)
	cases := []struct{ name, body string }{
		{"malformed", `{"id":`},
		{"missing_id", `{"currency":"USD"}`},
		{"missing_currency", `{"id":"bi-new"}`},
		{"id_space", `{"id":"bi new","currency":"USD"}`},
		{"id_too_long", `{"id":"` + strings.Repeat("a", 129) + `","currency":"USD"}`},
		{"currency_lowercase", `{"id":"bi-new","currency":"usd"}`},
		{"currency_too_long", `{"id":"bi-new","currency":"ABCDEFGHIJKLM"}`},
		{"overdraft_negative", `{"id":"bi-new","currency":"USD","overdraft_limit":-1}`},
		{"overdraft_2^53", `{"id":"bi-new","currency":"USD","overdraft_limit":9007199254740992}`},
		{"overdraft_string", `{"id":"bi-new","currency":"USD","overdraft_limit":"5"}`},
		{"metadata_17_keys", `{"id":"bi-new","currency":"USD","metadata":{` + strings.Join(manyKeys, ",") + `}}`},
		{"metadata_long_value", `{"id":"bi-new","currency":"USD","metadata":{"k":"` + long + `"}}`},
		{"metadata_long_key", `{"id":"bi-new","currency":"USD","metadata":{"` + long + `":"v"}}`},
		{"metadata_number", `{"id":"bi-new","currency":"USD","metadata":{"k":1}}`},
		{"unknown_field", `{"id":"bi-new","currency":"USD","owner":"me"}`},
	}
	var out []badCase
	for _, c := range cases {
		out = append(out, badCase{name: "account_" + c.name, method: http.MethodPost, path: "/v1/accounts", body: c.body, status: 400, code: "invalid_argument"})
	}
	return append(out, badCase{name: "account_body_too_large", method: http.MethodPost, path: "/v1/accounts",
		body: padded(`{"id":"bi-new","currency":"USD"}`, bodyLimit+1), status: 413, code: "body_too_large"})
}

// badOthers are refused requests on the post, batch, read and history
// routes, and on unknown routes and methods.
func badOthers() []badCase {
	post := "/v1/transfers/bi-hold/post"
	var out []badCase
	for _, nb := range [][2]string{
		{"post_negative", `{"amount":-1}`}, {"post_fraction", `{"amount":1.5}`}, {"post_string", `{"amount":"x"}`},
		{"post_unknown_field", `{"amt":1}`}, {"post_malformed", `{`},
		{"batch_transfers_string", `{"transfers":"x"}`}, {"batch_atomic_string", `{"atomic":"yes","transfers":[]}`},
		{"batch_unknown_field", `{"transfers":[],"x":1}`}, {"batch_malformed", `{"transfers":[`},
	} {
		path := post
		if strings.HasPrefix(nb[0], "batch") {
			path = "/v1/transfers/batch"
		}
		out = append(out, badCase{name: nb[0], method: http.MethodPost, path: path, body: nb[1], status: 400, code: "invalid_argument"})
	}
	for _, np := range [][2]string{
		{"get_account_bad_id", "/v1/accounts/bad%20id"}, {"get_account_long_id", "/v1/accounts/" + strings.Repeat("a", 129)},
		{"get_transfer_bad_id", "/v1/transfers/bad%20id"}, {"history_bad_id", "/v1/accounts/bad%20id/transfers"},
	} {
		out = append(out, badCase{name: np[0], method: http.MethodGet, path: np[1], status: 400, code: "invalid_argument"})
	}
	out = append(out, badCase{name: "post_bad_id", method: http.MethodPost, path: "/v1/transfers/bad%20id/post", status: 400, code: "invalid_argument"})
	for _, q := range []string{"limit=abc", "limit=0", "limit=1001", "limit=-1", "limit=1.5", "offset=-1", "offset=abc", "cursor=abc", "cursor=-1"} {
		out = append(out, badCase{name: "history_" + q, method: http.MethodGet, path: "/v1/accounts/bi-g/transfers?" + q, status: 400, code: "invalid_argument"})
	}
	return append(out,
		badCase{name: "batch_body_too_large", method: http.MethodPost, path: "/v1/transfers/batch", body: padded(`{"transfers":[]}`, batchBodyLimit+1), status: 413, code: "body_too_large"},
		badCase{name: "unknown_route", method: http.MethodGet, path: "/v1/nope", status: 404, code: "not_found"},
		badCase{name: "delete_account", method: http.MethodDelete, path: "/v1/accounts/bi-g", status: 405, code: "method_not_allowed"},
		badCase{name: "get_transfers_collection", method: http.MethodGet, path: "/v1/transfers", status: 405, code: "method_not_allowed"},
		badCase{name: "put_stats", method: http.MethodPut, path: "/v1/ledger/stats", status: 405, code: "method_not_allowed"},
	)
}

// TestBadInput sends malformed, mistyped, out-of-range, oversized and
// misaddressed requests: each gets its documented 4xx status and code, and
// afterwards nothing has changed and the server still runs. Last, a body of
// exactly the size limit is accepted.
func TestBadInput(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "4")
	c := srv.c
	openAccounts(t, c, "bi-g", "bi-o")
	fund(t, c, "bi-g", 1000)
	hold(t, c, TransferReq{ID: "bi-hold", From: "bi-g", To: "bi-o", Amount: 10})
	snap := takeSnapshot(t, c, "bi-g", "bi-o", world)
	held := mustGetTransfer(t, c, "bi-hold")

	for _, bc := range append(append(badTransfers(), badAccounts()...), badOthers()...) {
		t.Run(bc.name, func(t *testing.T) {
			ct, body := bc.contentType, []byte(nil)
			if bc.method == http.MethodPost {
				body = []byte(bc.body)
				if ct == "" {
					ct = "application/json"
				}
			}
			r, err := c.raw(bc.method, bc.path, ct, body)
			want(t, r, err, bc.status, bc.code)
		})
	}

	snap.wantUnchanged(t, c)
	if got := mustGetTransfer(t, c, "bi-hold"); !reflect.DeepEqual(got, held) {
		t.Errorf("bi-hold changed: was %+v, now %+v", held, got)
	}
	wantTransferNotFound(t, c, "bi-t")
	_, r, err := c.Account("bi-new")
	want(t, r, err, http.StatusNotFound, "account_not_found")
	r, err = c.raw(http.MethodGet, "/healthz", "", nil)
	want(t, r, err, http.StatusOK, "")
	if srv.isExited() {
		t.Errorf("server exited during bad input: %v", srv.err)
	}

	atLimit := padded(`{"id":"bi-limit","from":"bi-g","to":"bi-o","amount":1}`, bodyLimit)
	r, err = c.raw(http.MethodPost, "/v1/transfers", "application/json", []byte(atLimit))
	want(t, r, err, http.StatusCreated, "")
}
