package ledgerapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// badCase is a request the transport must refuse without calling the ledger.
type badCase struct {
	name, method, path, ct, body string
	status                       int
	code                         string
	// detail, if set, must appear in the problem's detail (the field it names).
	detail string
}

func transfer(extra string) string { return `{"id":"t-1","from":"a","to":"b",` + extra + `}` }

// manyItems is a batch body of n valid items.
func manyItems(n int) string {
	var b strings.Builder
	b.WriteString(`{"transfers":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"from":"a","to":"b","amount":%d}`, i+1)
	}
	b.WriteString(`]}`)
	return b.String()
}

func badTransferCases() []badCase {
	long := strings.Repeat("a", 129)
	cases := []struct{ name, body, detail string }{
		{"malformed", `{"from":"a","to":`, "malformed JSON"},
		{"array", `[1,2]`, "body: must be a JSON object"},
		{"string", `"x"`, "body"},
		{"number", `1`, "body"},
		{"null", `null`, "body"},
		{"empty", ``, "body"},
		{"blank", " \n\t", "body"},
		{"bom", "\xef\xbb\xbf" + transfer(`"amount":1`), "malformed JSON"},
		{"comment", `/**/` + transfer(`"amount":1`), "malformed JSON"},
		{"single_quotes", `{'from':'a','to':'b','amount':1}`, "malformed JSON"},
		{"trailing_object", transfer(`"amount":1`) + `{}`, "after the JSON object"},
		{"trailing_garbage", transfer(`"amount":1`) + ` x`, "after the JSON object"},
		{"trailing_comma", transfer(`"amount":1,`), "malformed JSON"},
		{"unknown_field", transfer(`"amount":1,"colour":"red"`), "colour: unknown field"},
		{"field_case", transfer(`"Amount":1`), "Amount: unknown field"},
		{"duplicate_field", transfer(`"amount":1,"amount":1000`), "amount: given more than once"},
		{"duplicate_null", transfer(`"amount":null,"amount":1`), "amount: given more than once"},
		{"from_number", `{"from":7,"to":"b","amount":1}`, "from: must be a string"},
		{"from_object", `{"from":{},"to":"b","amount":1}`, "from: must be a string"},
		{"amount_string", transfer(`"amount":"1"`), "amount: must be an integer"},
		{"amount_bool", transfer(`"amount":true`), "amount: must be an integer"},
		{"amount_zero", transfer(`"amount":0`), "amount: must be an integer from 1"},
		{"amount_minus_zero", transfer(`"amount":-0`), "amount"},
		{"amount_negative", transfer(`"amount":-1`), "amount"},
		{"amount_fraction", transfer(`"amount":1.5`), "amount: must be an integer"},
		{"amount_point_zero", transfer(`"amount":1.0`), "amount: must be an integer"},
		{"amount_exponent", transfer(`"amount":1e3`), "amount: must be an integer"},
		{"amount_plus", transfer(`"amount":+1`), "malformed JSON"},
		{"amount_leading_zero", transfer(`"amount":01`), "malformed JSON"},
		{"amount_hex", transfer(`"amount":0x10`), "malformed JSON"},
		{"amount_2^53", transfer(`"amount":9007199254740992`), "amount"},
		{"amount_2^63", transfer(`"amount":9223372036854775808`), "amount: is out of range"},
		{"amount_-2^63-1", transfer(`"amount":-9223372036854775809`), "amount: is out of range"},
		{"amount_huge", transfer(`"amount":100000000000000000000000000000`), "amount"},
		{"amount_null", transfer(`"amount":null`), "amount: is required"},
		{"missing_amount", `{"from":"a","to":"b"}`, "amount: is required"},
		{"missing_from", `{"to":"b","amount":1}`, "from: is required"},
		{"missing_to", `{"from":"a","amount":1}`, "to: is required"},
		{"pending_string", transfer(`"amount":1,"pending":"yes"`), "pending: must be true or false"},
		{"pending_number", transfer(`"amount":1,"pending":1`), "pending"},
		{"pending_truthy", transfer(`"amount":1,"pending":tru`), "malformed JSON"},
		{"timeout_negative", transfer(`"amount":1,"pending":true,"timeout_ms":-1`), "timeout_ms"},
		{"timeout_over_7_days", transfer(`"amount":1,"pending":true,"timeout_ms":604800001`), "timeout_ms"},
		{"timeout_fraction", transfer(`"amount":1,"pending":true,"timeout_ms":1.5`), "timeout_ms"},
		{"timeout_not_pending", transfer(`"amount":1,"timeout_ms":1000`), "timeout_ms: is only allowed"},
		{"memo_too_long", transfer(`"amount":1,"memo":"` + strings.Repeat("m", 513) + `"`), "memo"},
		{"memo_too_long_escaped", transfer(`"amount":1,"memo":"` + strings.Repeat(`\u00e9`, 257) + `"`), "memo"},
		{"memo_number", transfer(`"amount":1,"memo":5`), "memo"},
		{"memo_invalid_utf8", transfer(`"amount":1,"memo":"a` + "\xff" + `b"`), "invalid UTF-8"},
		{"memo_surrogate_utf8", transfer(`"amount":1,"memo":"a` + "\xed\xa0\x80" + `b"`), "invalid UTF-8"},
		{"memo_lone_surrogate", transfer(`"amount":1,"memo":"\ud800"`), "surrogate"},
		{"memo_reversed_surrogates", transfer(`"amount":1,"memo":"\udc00\ud800"`), "surrogate"},
		{"memo_control_char", transfer(`"amount":1,"memo":"a` + "\n" + `b"`), "malformed JSON"},
		{"memo_bad_escape", transfer(`"amount":1,"memo":"\x41"`), "malformed JSON"},
		{"memo_short_unicode", transfer(`"amount":1,"memo":"\u00e"`), "malformed JSON"},
		{"memo_unterminated", `{"from":"a","to":"b","amount":1,"memo":"abc`, "malformed JSON"},
		{"id_space", `{"id":"t 1","from":"a","to":"b","amount":1}`, "id: must be 1 to 128"},
		{"id_empty", `{"id":"","from":"a","to":"b","amount":1}`, "id"},
		{"id_too_long", `{"id":"` + long + `","from":"a","to":"b","amount":1}`, "id"},
		{"id_invalid_utf8", `{"id":"t-` + "\xff" + `","from":"a","to":"b","amount":1}`, "invalid UTF-8"},
		{"id_escaped_nul", `{"id":"t\u0000","from":"a","to":"b","amount":1}`, "id"},
		{"id_slash", `{"id":"t/1","from":"a","to":"b","amount":1}`, "id"},
		{"from_at_alone", `{"from":"@","to":"b","amount":1}`, "from"},
		{"from_at_inside", `{"from":"a@b","to":"b","amount":1}`, "from"},
		{"to_unicode", `{"from":"a","to":"bé","amount":1}`, "to"},
		{"currency_lowercase", transfer(`"amount":1,"currency":"usd"`), "currency"},
		{"currency_empty", transfer(`"amount":1,"currency":""`), "currency"},
		{"currency_too_long", transfer(`"amount":1,"currency":"ABCDEFGHIJKLM"`), "currency"},
	}
	var out []badCase
	for _, c := range cases {
		out = append(out, badCase{name: "transfer_" + c.name, method: "POST", path: "/v1/transfers", ct: "application/json",
			body: c.body, status: 400, code: "invalid_argument", detail: c.detail})
	}
	return append(out,
		badCase{name: "transfer_same_account", method: "POST", path: "/v1/transfers", body: `{"from":"a","to":"a","amount":1}`, status: 422, code: "same_account", detail: "a"},
		badCase{name: "transfer_same_system_account", method: "POST", path: "/v1/transfers", body: `{"from":"@world","to":"@world","amount":1}`, status: 422, code: "same_account"},
		badCase{name: "transfer_text_plain", method: "POST", path: "/v1/transfers", ct: "text/plain", body: transfer(`"amount":1`), status: 415, code: "unsupported_media_type"},
		badCase{name: "transfer_form", method: "POST", path: "/v1/transfers", ct: "application/x-www-form-urlencoded", body: "from=a", status: 415, code: "unsupported_media_type"},
		badCase{name: "transfer_latin1", method: "POST", path: "/v1/transfers", ct: "application/json; charset=iso-8859-1", body: transfer(`"amount":1`), status: 415, code: "unsupported_media_type"},
		badCase{name: "transfer_bad_media_type", method: "POST", path: "/v1/transfers", ct: "application/", body: transfer(`"amount":1`), status: 415, code: "unsupported_media_type"},
		badCase{name: "transfer_body_too_large", method: "POST", path: "/v1/transfers", body: transfer(`"amount":1`) + strings.Repeat(" ", maxBody), status: 413, code: "body_too_large"},
	)
}

func badAccountCases() []badCase {
	keys := make([]string, 17)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	long := strings.Repeat("a", 257)
	cases := []struct{ name, body, detail string }{
		{"malformed", `{"id":`, "malformed JSON"},
		{"array", `[]`, "body"},
		{"missing_id", `{"currency":"USD"}`, "id: is required"},
		{"missing_currency", `{"id":"alice"}`, "currency: is required"},
		{"null_currency", `{"id":"alice","currency":null}`, "currency: is required"},
		{"id_space", `{"id":"al ice","currency":"USD"}`, "id"},
		{"id_too_long", `{"id":"` + strings.Repeat("a", 129) + `","currency":"USD"}`, "id"},
		{"currency_lowercase", `{"id":"alice","currency":"usd"}`, "currency"},
		{"currency_too_long", `{"id":"alice","currency":"ABCDEFGHIJKLM"}`, "currency"},
		{"currency_number", `{"id":"alice","currency":840}`, "currency: must be a string"},
		{"overdraft_negative", `{"id":"alice","currency":"USD","overdraft_limit":-1}`, "overdraft_limit"},
		{"overdraft_2^53", `{"id":"alice","currency":"USD","overdraft_limit":9007199254740992}`, "overdraft_limit"},
		{"overdraft_string", `{"id":"alice","currency":"USD","overdraft_limit":"5"}`, "overdraft_limit"},
		{"overdraft_fraction", `{"id":"alice","currency":"USD","overdraft_limit":0.5}`, "overdraft_limit"},
		{"metadata_17_keys", `{"id":"alice","currency":"USD","metadata":{` + strings.Join(keys, ",") + `}}`, "metadata: must have at most 16"},
		{"metadata_long_value", `{"id":"alice","currency":"USD","metadata":{"k":"` + long + `"}}`, "metadata"},
		{"metadata_long_key", `{"id":"alice","currency":"USD","metadata":{"` + long + `":"v"}}`, "metadata"},
		{"metadata_empty_key", `{"id":"alice","currency":"USD","metadata":{"":"v"}}`, "metadata"},
		{"metadata_number", `{"id":"alice","currency":"USD","metadata":{"k":1}}`, "metadata.k: must be a string"},
		{"metadata_null_value", `{"id":"alice","currency":"USD","metadata":{"k":null}}`, "metadata.k: must be a string"},
		{"metadata_array", `{"id":"alice","currency":"USD","metadata":["k"]}`, "metadata: must be a JSON object"},
		{"metadata_duplicate", `{"id":"alice","currency":"USD","metadata":{"k":"1","k":"2"}}`, "metadata.k: given more than once"},
		{"metadata_invalid_utf8", `{"id":"alice","currency":"USD","metadata":{"k":"` + "\xc3" + `"}}`, "invalid UTF-8"},
		{"unknown_field", `{"id":"alice","currency":"USD","owner":"me"}`, "owner: unknown field"},
		{"balance_field", `{"id":"alice","currency":"USD","balance":100}`, "balance: unknown field"},
	}
	var out []badCase
	for _, c := range cases {
		out = append(out, badCase{name: "account_" + c.name, method: "POST", path: "/v1/accounts", ct: "application/json",
			body: c.body, status: 400, code: "invalid_argument", detail: c.detail})
	}
	return append(out,
		badCase{name: "account_body_too_large", method: "POST", path: "/v1/accounts",
			body: `{"id":"alice","currency":"USD"}` + strings.Repeat(" ", maxBody), status: 413, code: "body_too_large"},
		badCase{name: "account_xml", method: "POST", path: "/v1/accounts", ct: "application/xml", body: `<a/>`, status: 415, code: "unsupported_media_type"})
}

func badOtherCases() []badCase {
	const post, void, batch = "/v1/transfers/p-1/post", "/v1/transfers/p-1/void", "/v1/transfers/batch"
	var out []badCase
	for _, c := range []struct{ name, path, body, detail string }{
		{"post_negative", post, `{"amount":-1}`, "amount"},
		{"post_zero", post, `{"amount":0}`, "amount"},
		{"post_2^53", post, `{"amount":9007199254740992}`, "amount"},
		{"post_fraction", post, `{"amount":1.5}`, "amount: must be an integer"},
		{"post_string", post, `{"amount":"x"}`, "amount"},
		{"post_unknown_field", post, `{"amt":1}`, "amt: unknown field"},
		{"post_duplicate", post, `{"amount":1,"amount":2}`, "amount: given more than once"},
		{"post_malformed", post, `{`, "malformed JSON"},
		{"post_array", post, `[]`, "body"},
		{"post_trailing", post, `{"amount":1}]`, "after the JSON object"},
		{"void_field", void, `{"amount":1}`, "amount: unknown field"},
		{"void_array", void, `[]`, "body"},
		{"void_null", void, `null`, "body"},
		{"batch_transfers_string", batch, `{"transfers":"x"}`, "transfers: must be an array"},
		{"batch_atomic_string", batch, `{"atomic":"yes","transfers":[]}`, "atomic: must be true or false"},
		{"batch_unknown_field", batch, `{"transfers":[],"x":1}`, "x: unknown field"},
		{"batch_duplicate", batch, `{"transfers":[],"transfers":[]}`, "transfers: given more than once"},
		{"batch_malformed", batch, `{"transfers":[`, "malformed JSON"},
		{"batch_trailing_comma", batch, `{"transfers":[{"from":"a","to":"b","amount":1},]}`, "malformed JSON"},
		{"batch_missing_comma", batch, `{"transfers":[{"from":"a","to":"b","amount":1}{"from":"a","to":"b","amount":1}]}`, "malformed JSON"},
		{"batch_missing_transfers", batch, `{"atomic":true}`, "transfers: is required"},
		{"batch_null_transfers", batch, `{"transfers":null}`, "transfers: is required"},
		{"batch_item_null", batch, `{"transfers":[null]}`, "transfers[0]: must be a JSON object"},
		{"batch_item_number", batch, `{"transfers":[1]}`, "transfers[0]: must be a JSON object"},
		{"batch_item_bad_amount", batch, `{"transfers":[{"from":"a","to":"b","amount":1},{"from":"a","to":"b","amount":0}]}`, "transfers[1].amount"},
		{"batch_item_unknown_field", batch, `{"transfers":[{"from":"a","to":"b","amount":1,"x":0}]}`, "transfers[0].x: unknown field"},
		{"batch_item_missing_to", batch, `{"transfers":[{"from":"a","amount":1}]}`, "transfers[0].to: is required"},
		{"batch_item_bad_id", batch, `{"transfers":[{"id":"a b","from":"a","to":"b","amount":1}]}`, "transfers[0].id"},
		{"batch_item_string_amount", batch, `{"transfers":[{"from":"a","to":"b","amount":"1"}]}`, "transfers[0].amount: must be an integer"},
	} {
		out = append(out, badCase{name: c.name, method: "POST", path: c.path, ct: "application/json", body: c.body, status: 400, code: "invalid_argument", detail: c.detail})
	}
	for _, c := range [][2]string{
		{"get_account_bad_id", "/v1/accounts/bad%20id"}, {"get_account_long_id", "/v1/accounts/" + strings.Repeat("a", 129)},
		{"get_account_at", "/v1/accounts/@"}, {"get_account_slash", "/v1/accounts/a%2Fb"},
		{"get_transfer_bad_id", "/v1/transfers/bad%20id"}, {"history_bad_id", "/v1/accounts/bad%20id/transfers"},
		{"get_account_utf8", "/v1/accounts/%C3%A9"}, {"get_account_invalid_utf8", "/v1/accounts/%FF"},
	} {
		out = append(out, badCase{name: c[0], method: "GET", path: c[1], status: 400, code: "invalid_argument", detail: "id in path"})
	}
	out = append(out,
		badCase{name: "post_bad_id", method: "POST", path: "/v1/transfers/bad%20id/post", status: 400, code: "invalid_argument", detail: "id in path"},
		badCase{name: "void_bad_id", method: "POST", path: "/v1/transfers/bad%20id/void", status: 400, code: "invalid_argument", detail: "id in path"})
	for _, q := range []struct{ query, detail string }{
		{"limit=abc", "limit"}, {"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=-1", "limit"}, {"limit=1.5", "limit"},
		{"limit=", "limit"}, {"limit", "limit"}, {"limit=+5", "limit"}, {"limit=1e2", "limit"}, {"limit=99999999999999999999", "limit"},
		{"offset=-1", "offset"}, {"offset=abc", "offset"}, {"offset=", "offset"}, {"offset=18446744073709551616", "offset"},
		{"cursor=abc", "cursor"}, {"cursor=-1", "cursor"}, {"cursor=0", "cursor"}, {"cursor=0x10", "cursor"},
		{"limit=1&limit=2", "limit: given more than once"}, {"cursor=5&offset=10", "offset: cannot be combined with cursor"},
		{"page=2", "page: unknown query parameter"}, {"Limit=2", "Limit: unknown query parameter"},
		{"limit=%zz", "query"}, {"limit=5;offset=1", "limit"},
	} {
		out = append(out, badCase{name: "history_" + q.query, method: "GET", path: "/v1/accounts/alice/transfers?" + q.query,
			status: 400, code: "invalid_argument", detail: q.detail})
	}
	return append(out,
		badCase{name: "batch_body_too_large", method: "POST", path: batch, body: `{"transfers":[]}` + strings.Repeat(" ", MaxBatchBody), status: 413, code: "body_too_large"},
		badCase{name: "batch_too_large", method: "POST", path: batch, body: manyItems(8191), status: 413, code: "batch_too_large", detail: "8190"},
		badCase{name: "batch_text", method: "POST", path: batch, ct: "text/json", body: `{"transfers":[]}`, status: 415, code: "unsupported_media_type"},
		badCase{name: "post_text", method: "POST", path: post, ct: "text/plain", body: `{}`, status: 415, code: "unsupported_media_type"},
		badCase{name: "post_body_too_large", method: "POST", path: post, body: `{}` + strings.Repeat(" ", maxBody), status: 413, code: "body_too_large"},
	)
}

// TestBadInput sends every malformed, mistyped, out-of-range and oversized
// request of docs/API.md: each gets its status and code as a problem, and
// the ledger is never called.
func TestBadInput(t *testing.T) {
	ta := newTestAPI(t, "")
	all := append(append(badTransferCases(), badAccountCases()...), badOtherCases()...)
	for _, bc := range all {
		t.Run(bc.name, func(t *testing.T) {
			w := ta.do(bc.method, bc.path, bc.ct, bc.body)
			p := wantProblem(t, w, bc.status, bc.code)
			if !strings.Contains(p.Detail, bc.detail) {
				t.Errorf("detail %q does not mention %q", p.Detail, bc.detail)
			}
			if n := ta.fake.ncalls(); n != 0 {
				t.Errorf("the ledger was called %d times: %v", n, ta.fake.calls)
			}
		})
	}
}

// TestBodyTooLargeByContentLength refuses a body whose declared length is over
// the limit before reading it.
func TestBodyTooLargeByContentLength(t *testing.T) {
	ta := newTestAPI(t, "")
	r, _ := http.NewRequest("POST", "/v1/transfers", strings.NewReader(`{}`))
	r.ContentLength = maxBody + 1
	w := newRecorder()
	ta.Handler().ServeHTTP(w, r)
	wantProblem(t, w, 413, "body_too_large")
}
