package ledgerapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/surge-dev/surge/internal/ledger"
)

// The fuzz targets check two things of every input: the decoders never
// panic, and they agree with a reference built on encoding/json. When both
// accept, the results must be equal; when only the reference accepts, the
// scanner's reason must be one of its deliberate strictnesses (a repeated
// member, a member named in another case, invalid Unicode). Accepted results
// must also satisfy the contract's invariants, checked independently here.

// refTransfer is the reference decoding of a transfer object: pointers tell
// absent (or null) from zero.
type refTransfer struct {
	ID        *string `json:"id"`
	From      *string `json:"from"`
	To        *string `json:"to"`
	Amount    *int64  `json:"amount"`
	Currency  *string `json:"currency"`
	Memo      *string `json:"memo"`
	Pending   *bool   `json:"pending"`
	TimeoutMS *int64  `json:"timeout_ms"`
}

func (r *refTransfer) input() transferInput {
	var in transferInput
	setRef(&in.has, fID, r.ID, &in.id)
	setRef(&in.has, fFrom, r.From, &in.from)
	setRef(&in.has, fTo, r.To, &in.to)
	setRef(&in.has, fAmount, r.Amount, &in.amount)
	setRef(&in.has, fCurrency, r.Currency, &in.currency)
	setRef(&in.has, fMemo, r.Memo, &in.memo)
	setRef(&in.has, fPending, r.Pending, &in.pending)
	setRef(&in.has, fTimeout, r.TimeoutMS, &in.timeoutMS)
	return in
}

func setRef[T any](has *fields, f fields, p *T, dst *T) {
	if p != nil {
		*has |= f
		*dst = *p
	}
}

// refDecode decodes data into v as strictly as encoding/json can: unknown
// fields and trailing data are errors.
func refDecode(data []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// strictOnly reports whether err is a refusal that encoding/json would not
// make: the scanner's deliberate strictness.
func strictOnly(err *inputError, known ...string) bool {
	switch err.kind {
	case errDuplicateField, errBadUnicode:
		return true
	case errUnknownField:
		key := err.field[strings.LastIndexByte(err.field, '.')+1:]
		for _, k := range known {
			if strings.EqualFold(key, k) {
				return true
			}
		}
	}
	return false
}

var transferFields = []string{"id", "from", "to", "amount", "currency", "memo", "pending", "timeout_ms"}

// refTransferRequest decodes and validates a transfer with the reference.
func refTransferRequest(data []byte) (ledger.TransferRequest, bool) {
	var r *refTransfer
	if !refDecode(data, &r) || r == nil {
		return ledger.TransferRequest{}, false
	}
	in := r.input()
	req, err := in.request(-1)
	return req, err == nil
}

// checkTransfer checks the invariants of an accepted transfer request.
func checkTransfer(t *testing.T, req ledger.TransferRequest) {
	t.Helper()
	ok := req.Amount >= 1 && req.Amount <= 1<<53-1 &&
		validIDRef(req.From) && validIDRef(req.To) && (req.ID == "" || validIDRef(req.ID)) &&
		(req.Currency == "" || validCurrencyRef(req.Currency)) &&
		len(req.Memo) <= 512 && utf8.ValidString(req.Memo) &&
		req.Timeout >= 0 && req.Timeout <= ledger.MaxTimeout && (req.Timeout == 0 || req.Pending)
	if !ok {
		t.Fatalf("accepted an invalid transfer: %+v", req)
	}
}

// validIDRef and validCurrencyRef restate the id and currency rules of
// docs/API.md independently of the code under test.
func validIDRef(s string) bool {
	body := strings.TrimPrefix(s, "@")
	if len(s) > 128 || body == "" {
		return false
	}
	for _, r := range body {
		if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-", r) {
			return false
		}
	}
	return true
}

func validCurrencyRef(s string) bool {
	return len(s) >= 1 && len(s) <= 12 && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
}

// transferSeeds are bodies that reach the scanner's corners.
var transferSeeds = []string{
	`{"id":"t-1","from":"@world","to":"alice","amount":100,"currency":"USD","memo":"funding","pending":false,"timeout_ms":0}`,
	`{"from":"a","to":"b","amount":1}`,
	`{"from":"a","to":"b","amount":9007199254740991,"pending":true,"timeout_ms":604800000}`,
	`{"from":"a","to":"b","amount":9007199254740992}`,
	`{"from":"a","to":"b","amount":-9223372036854775808}`,
	`{"from":"a","to":"b","amount":9223372036854775807}`,
	`{"from":"a","to":"b","amount":9223372036854775808}`,
	`{"from":"a","to":"b","amount":1.5}`, `{"from":"a","to":"b","amount":1e3}`, `{"from":"a","to":"b","amount":-0}`,
	`{"from":"a","to":"b","amount":1E+2}`, `{"from":"a","to":"b","amount":0.0e-0}`, `{"from":"a","to":"b","amount":1.}`,
	`{"from":"a","to":"b","amount":"1"}`, `{"from":"a","to":"b","amount":null}`, `{"from":"a","to":"a","amount":1}`,
	`{"from":"a","to":"b","amount":1,"amount":2}`, `{"from":"a","to":"b","AMOUNT":1}`, `{"from":"a","to":"b","amount":1,"timeout_mſ":5}`,
	`{"from":"a","to":"b","amount":1,"memo":"\ud83d\ude00 \u00e9 \/ \b\f\n\r\t \" \\"}`,
	`{"from":"a","to":"b","amount":1,"memo":"\ud800"}`, `{"from":"a","to":"b","amount":1,"memo":"\udc00"}`,
	`{"from":"a","to":"b","amount":1,"memo":"\ud800\u0041"}`, `{"from":"a","to":"b","amount":1,"memo":"` + "\xff" + `"}`,
	`{"from":"a","to":"b","amount":1,"memo":"` + "\xed\xa0\x80" + `"}`, `{"from":"a","to":"b","amount":1,"memo":"` + "\xef\xbf\xbd" + `"}`,
	`{"fr\u006fm":"a","to":"b","amount":1}`, `{"from":"\u0061","to":"b","amount":1}`,
	`{"from":"a","to":"b","amount":1}x`, `{"from":"a","to":"b","amount":1} `, ` {} `, `{}`, `[]`, `null`, ``, `{`, `}`, `{"`, `{"a"`, `{"a":`,
	`{"from":"a","to":"b","amount":1,"pending":true}`, `{"from":"a","to":"b","amount":1,"pending":nul}`,
	`{"from":"a","to":"b","amount":1,"timeout_ms":5}`, `{"from":"a","to":"b","amount":1,"timeout_ms":-5,"pending":true}`,
	`{"id":"","from":"a","to":"b","amount":1}`, `{"id":"@","from":"a","to":"b","amount":1}`, `{"id":"@@","from":"a","to":"b","amount":1}`,
	`{"from":"a","to":"b","amount":1,"currency":"usd"}`, `{"from":"a","to":"b","amount":1,"memo":{}}`, `{"from":"a","to":"b","amount":[1]}`,
	"{\"from\":\"a\",\"to\":\"b\",\"amount\":1,\"memo\":\"\x00\"}", `{"from":"a","to":"b","amount":01}`, `{"from":"a","to":"b","amount":-}`,
}

func FuzzDecodeTransfer(f *testing.F) {
	for _, s := range transferSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := decodeTransfer(data)
		ref, refOK := refTransferRequest(data)
		switch {
		case err == nil && !refOK:
			t.Fatalf("accepted what encoding/json refuses: %+v", req)
		case err == nil && req != ref:
			t.Fatalf("decoded %+v, encoding/json %+v", req, ref)
		case err != nil && refOK && !strictOnly(err, transferFields...):
			t.Fatalf("refused (%v, kind %d) what encoding/json accepts: %+v", err, err.kind, ref)
		case err == nil:
			checkTransfer(t, req)
		}
	})
}

// refBatch is the reference decoding of a batch.
type refBatch struct {
	Atomic    *bool          `json:"atomic"`
	Transfers []*refTransfer `json:"transfers"`
}

// refBatchInput decodes and validates a batch with the reference. tooLarge
// reports a batch refused for its size alone.
func refBatchInput(data []byte) (b batchInput, ok, tooLarge bool) {
	var r *refBatch
	if !refDecode(data, &r) || r == nil || r.Transfers == nil {
		return b, false, false
	}
	if len(r.Transfers) > ledger.MaxBatch {
		return b, false, true
	}
	b.atomic = r.Atomic != nil && *r.Atomic
	b.reqs = []ledger.TransferRequest{}
	for i, rt := range r.Transfers {
		if rt == nil {
			return b, false, false
		}
		in := rt.input()
		req, err := in.request(i)
		if err != nil {
			return b, false, false
		}
		if req.From == req.To {
			b.same = append(b.same, i)
		}
		b.reqs = append(b.reqs, req)
	}
	return b, true, false
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte(`{"atomic":false,"transfers":[{"id":"b-1","from":"alice","to":"bob","amount":5},{"from":"x","to":"x","amount":1}]}`))
	f.Add([]byte(`{"transfers":[],"atomic":true}`))
	f.Add([]byte(`{"transfers":[null]}`))
	f.Add([]byte(`{"transfers":null}`))
	f.Add([]byte(`{"transfers":[{"from":"a","to":"b","amount":1},]}`))
	f.Add([]byte(`{"transfers":[{"from":"a","to":"b","amount":1}],"transfers":[]}`))
	f.Add([]byte(`{"Transfers":[{"from":"a","to":"b","amount":1}]}`))
	f.Add([]byte(`{"transfers":[{"from":"a","to":"b","amount":0}]}`))
	f.Add([]byte(`{"transfers":[ {"from":"a","to":"b","amount":1} , {"from":"b","to":"a","amount":2,"pending":true,"timeout_ms":1} ] }`))
	f.Add([]byte(`{"atomic":null,"transfers":[[]]}`))
	f.Add([]byte(manyItems(3)))
	for _, s := range transferSeeds[:20] {
		f.Add([]byte(`{"transfers":[` + s + `]}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data)
		ref, refOK, tooLarge := refBatchInput(data)
		switch {
		case err == nil && !refOK:
			t.Fatalf("accepted what encoding/json refuses: %+v", b)
		case err == nil && (b.atomic != ref.atomic || !reflect.DeepEqual(b.reqs, ref.reqs) || !reflect.DeepEqual(b.same, ref.same)):
			t.Fatalf("decoded %+v, encoding/json %+v", b, ref)
		case err != nil && tooLarge && err.kind != errBatchTooLarge:
			t.Fatalf("a batch of over %d items refused with %v", ledger.MaxBatch, err)
		case err != nil && refOK && !strictOnly(err, append(transferFields, "atomic", "transfers")...):
			t.Fatalf("refused (%v, kind %d) what encoding/json accepts: %+v", err, err.kind, ref)
		case err == nil:
			checkBatch(t, &b)
		}
	})
}

func checkBatch(t *testing.T, b *batchInput) {
	t.Helper()
	if len(b.reqs) > ledger.MaxBatch {
		t.Fatalf("accepted %d items", len(b.reqs))
	}
	same := 0
	for i, req := range b.reqs {
		checkTransfer(t, req)
		if req.From == req.To {
			if same >= len(b.same) || b.same[same] != i {
				t.Fatalf("item %d is same_account but same = %v", i, b.same)
			}
			same++
		}
	}
	if same != len(b.same) {
		t.Fatalf("same = %v lists items that are not same_account", b.same)
	}
}

// refAccount is the reference decoding of an account.
type refAccount struct {
	ID             *string             `json:"id"`
	Currency       *string             `json:"currency"`
	OverdraftLimit *int64              `json:"overdraft_limit"`
	Metadata       *map[string]*string `json:"metadata"`
}

func refAccountSpec(data []byte) (ledger.AccountSpec, bool) {
	var r *refAccount
	if !refDecode(data, &r) || r == nil {
		return ledger.AccountSpec{}, false
	}
	var in accountInput
	setRef(&in.has, fID, r.ID, &in.spec.ID)
	setRef(&in.has, fCurrency, r.Currency, &in.spec.Currency)
	setRef(&in.has, fOverdraft, r.OverdraftLimit, &in.spec.OverdraftLimit)
	if r.Metadata != nil {
		in.has |= fMetadata
		in.spec.Metadata = map[string]string{}
		for k, v := range *r.Metadata {
			if v == nil {
				return ledger.AccountSpec{}, false
			}
			in.spec.Metadata[k] = *v
		}
	}
	spec, err := in.validate()
	return spec, err == nil
}

func FuzzDecodeAccount(f *testing.F) {
	for _, s := range []string{
		`{"id":"alice","currency":"USD","overdraft_limit":0,"metadata":{"tier":"gold"}}`,
		`{"id":"@bank","currency":"EUR"}`, `{"id":"a","currency":"X","metadata":{}}`, `{"id":"a","currency":"X","metadata":null}`,
		`{"id":"a","currency":"X","metadata":{"k":null}}`, `{"id":"a","currency":"X","metadata":{"k":"1","k":"2"}}`,
		`{"id":"a","currency":"X","metadata":{"":"v"}}`, `{"id":"a","currency":"X","overdraft_limit":9007199254740991}`,
		`{"id":"a","currency":"X","overdraft_limit":-1}`, `{"id":"a","currency":"X","Metadata":{}}`, `{"id":"a"}`,
		`{"id":"a","currency":"X","metadata":{"k":"` + "\xff" + `"}}`, `{"id":"a","currency":"X","metadata":{"\u00e9":"\ud83d\ude00"}}`,
		`{"id":"a","currency":"X","metadata":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":""}}`,
		`{"id":"a","currency":"X","metadata":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":""}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := decodeAccount(data)
		ref, refOK := refAccountSpec(data)
		switch {
		case err == nil && !refOK:
			t.Fatalf("accepted what encoding/json refuses: %+v", spec)
		case err == nil && !reflect.DeepEqual(spec, ref):
			t.Fatalf("decoded %#v, encoding/json %#v", spec, ref)
		case err != nil && refOK && !strictOnly(err, "id", "currency", "overdraft_limit", "metadata"):
			t.Fatalf("refused (%v, kind %d) what encoding/json accepts: %+v", err, err.kind, ref)
		case err == nil:
			checkAccount(t, spec)
		}
	})
}

func checkAccount(t *testing.T, spec ledger.AccountSpec) {
	t.Helper()
	ok := validIDRef(spec.ID) && validCurrencyRef(spec.Currency) && spec.OverdraftLimit >= 0 &&
		spec.OverdraftLimit <= 1<<53-1 && len(spec.Metadata) <= 16 && (spec.Metadata == nil || len(spec.Metadata) > 0)
	for k, v := range spec.Metadata {
		ok = ok && k != "" && len(k) <= 256 && len(v) <= 256 && utf8.ValidString(k) && utf8.ValidString(v)
	}
	if !ok {
		t.Fatalf("accepted an invalid account: %#v", spec)
	}
}

func FuzzDecodePost(f *testing.F) {
	for _, s := range []string{``, ` `, `{}`, `{"amount":60}`, `{"amount":null}`, `{"amount":0}`, `{"amount":1,"amount":1}`, `{"Amount":1}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		amount, err := decodePost(data)
		var r *struct {
			Amount *int64 `json:"amount"`
		}
		refOK := refDecode(data, &r) && r != nil && (r.Amount == nil || validAmount(*r.Amount))
		if isBlank(data) {
			if err != nil || amount != 0 {
				t.Fatalf("blank body: %d, %v", amount, err)
			}
			return
		}
		switch {
		case err == nil && !refOK:
			t.Fatalf("accepted what encoding/json refuses: %d", amount)
		case err == nil && amount != 0 && (r.Amount == nil || amount != *r.Amount):
			t.Fatalf("decoded %d, encoding/json %v", amount, r.Amount)
		case err == nil && amount != 0 && !validAmount(amount):
			t.Fatalf("accepted amount %d", amount)
		case err != nil && refOK && !strictOnly(err, "amount"):
			t.Fatalf("refused (%v) what encoding/json accepts", err)
		}
		var m map[string]json.RawMessage
		emptyObject := refDecode(data, &m) && m != nil && len(m) == 0
		if eerr := decodeEmpty(data); (eerr == nil) != emptyObject {
			t.Fatalf("decodeEmpty: %v; encoding/json finds an empty object: %v", eerr, emptyObject)
		}
	})
}

// refHistoryQuery parses a history query with net/url.
func refHistoryQuery(raw string) (ledger.HistoryQuery, bool) {
	q := ledger.HistoryQuery{Limit: 50}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return q, false
	}
	for k, v := range vals {
		if len(v) != 1 {
			return q, false
		}
		n, err := strconv.ParseUint(v[0], 10, 64)
		switch {
		case k == "limit" && err == nil && n >= 1 && n <= 1000:
			q.Limit = int(n)
		case k == "cursor" && v[0] == "":
		case k == "cursor" && err == nil && n > 0:
			q.Cursor = n
		case k == "offset" && err == nil:
			q.Offset = n
		default:
			return q, false
		}
	}
	return q, !(q.Cursor != 0 && vals.Has("offset"))
}

func FuzzHistoryQuery(f *testing.F) {
	for _, s := range []string{"", "limit=50", "limit=1000&cursor=2", "offset=100", "cursor=", "cursor=&offset=1", "limit=0",
		"limit=1001", "limit=1&limit=1", "cursor=1&offset=1", "x=1", "limit=%31", "limit=%zz", "limit=1;offset=2", "&&", "=", "limit",
		"cursor=18446744073709551616", "offset=+1", "limit=1+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseHistoryQuery(raw)
		ref, refOK := refHistoryQuery(raw)
		if (err == nil) != refOK || (err == nil && q != ref) {
			t.Fatalf("%q: got %+v, %v; net/url reference %+v, %v", raw, q, err, ref, refOK)
		}
		if err == nil && (q.Limit < 1 || q.Limit > 1000 || (q.Cursor != 0 && q.Offset != 0)) {
			t.Fatalf("%q: accepted %+v", raw, q)
		}
	})
}

// FuzzHandler drives whole requests through the handler over a fake ledger
// that always succeeds: no request may panic or fail with a 5xx, every /v1
// error must be a well-formed problem, and refused requests must not reach
// the ledger.
func FuzzHandler(f *testing.F) {
	f.Add("POST", "/v1/transfers", "application/json", []byte(`{"from":"a","to":"b","amount":1}`))
	f.Add("POST", "/v1/transfers/batch", "", []byte(`{"transfers":[{"from":"a","to":"a","amount":1}],"atomic":true}`))
	f.Add("POST", "/v1/accounts", "application/json; charset=utf-8", []byte(`{"id":"a","currency":"USD"}`))
	f.Add("GET", "/v1/accounts/a/transfers?limit=5&cursor=3", "", []byte(nil))
	f.Add("POST", "/v1/transfers/x/post", "text/plain", []byte(`{"amount":1}`))
	f.Add("POST", "/v1/transfers/x/void", "", []byte(`{}`))
	f.Add("DELETE", "/v1/ledger/stats", "", []byte(nil))
	f.Add("GET", "/v1//accounts/%2e%2e", "", []byte(nil))
	f.Add("GET", "/healthz", "", []byte(nil))
	ta := newTestAPI(f, "")
	f.Fuzz(func(t *testing.T, method, target, ct string, body []byte) {
		if !validMethod(method) || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \x00\r\n\t#") || strings.ContainsAny(ct, "\x00\r\n") {
			return // not a request net/http would deliver
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Path == "/metrics" {
			return
		}
		r := httptest.NewRequest(method, "http://surge"+target, bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		before := ta.fake.ncalls()
		w := httptest.NewRecorder()
		ta.Handler().ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, w.Code, w.Body)
		}
		if !isV1(r.URL.Path) {
			return
		}
		if w.Code == 422 && r.URL.Path == "/v1/transfers/batch" && method == "POST" {
			var br batchReply // an aborted atomic batch: results, not a problem
			if json.Unmarshal(w.Body.Bytes(), &br) != nil || len(br.Results) == 0 {
				t.Fatalf("%s %s: bad batch reply %s", method, target, w.Body)
			}
		} else if w.Code >= 400 {
			var p problemBody
			if w.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Status != w.Code || p.Code == "" {
				t.Fatalf("%s %s: not a problem: %d %q %s", method, target, w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			if p.Code != "same_account" && p.Code != "batch_aborted" && ta.fake.ncalls() != before {
				t.Fatalf("%s %s: refused with %s after calling the ledger", method, target, p.Code)
			}
		} else if !json.Valid(w.Body.Bytes()) && method != "HEAD" {
			t.Fatalf("%s %s: invalid JSON reply %s", method, target, w.Body)
		}
	})
}

// validMethod reports whether m is an HTTP token, as net/http requires.
func validMethod(m string) bool {
	if m == "" || m == "CONNECT" {
		return false
	}
	for _, c := range []byte(m) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
