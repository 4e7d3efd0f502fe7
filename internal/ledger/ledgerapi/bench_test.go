package ledgerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/ledger"
)

// nopLedger answers at once, so that benchmarks measure the transport alone.
type nopLedger struct{ *fakeLedger }

func (nopLedger) Transfer(_ context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	return transferOf(req), false, nil
}

func (nopLedger) TransferBatch(_ context.Context, reqs []ledger.TransferRequest, _ bool) ([]ledger.BatchResult, error) {
	out := make([]ledger.BatchResult, len(reqs))
	for i := range reqs {
		out[i].Transfer.ID = reqs[i].ID
	}
	return out, nil
}

// discardWriter is a ResponseWriter that keeps nothing, cheaper than a recorder.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

func benchRequests(b *testing.B, path string, body []byte, want int) {
	benchHandler(b, New(nopLedger{&fakeLedger{}}, Options{Registry: prometheus.NewRegistry()}).Handler(), path, body, want)
}

// benchHandler posts body to path through h, expecting status want.
func benchHandler(b *testing.B, h http.Handler, path string, body []byte, want int) {
	r := httptest.NewRequest("POST", path, nil)
	r.Header.Set("Content-Type", "application/json")
	rd := bytes.NewReader(body)
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r.Body = io.NopCloser(rd)
		r.ContentLength = int64(len(body))
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != want {
			b.Fatalf("status %d", w.status)
		}
	}
}

// transferBody is a typical single transfer.
var transferBody = []byte(`{"id":"t-123456","from":"acct-000123","to":"acct-004567","amount":2500,"memo":"rent"}`)

func BenchmarkTransfer(b *testing.B) {
	benchRequests(b, "/v1/transfers", transferBody, 201)
}

func batchBody(n int) []byte {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"id": "b-" + itoa(i), "from": "acct-" + itoa(i%1000), "to": "acct-" + itoa(i%1000+1000), "amount": i + 1}
	}
	body, _ := json.Marshal(map[string]any{"transfers": items})
	return body
}

func itoa(i int) string { return string(appendUint(nil, "", uint64(i))) }

func BenchmarkBatch8190(b *testing.B) {
	benchRequests(b, "/v1/transfers/batch", batchBody(ledger.MaxBatch), 200)
}

// BenchmarkDecodeBatchScanner and BenchmarkDecodeBatchEncodingJSON compare
// the hand-written decoder with encoding/json on the same batch.
func BenchmarkDecodeBatchScanner(b *testing.B) {
	body := batchBody(ledger.MaxBatch)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBatch(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBatchEncodingJSON(b *testing.B) {
	body := batchBody(ledger.MaxBatch)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var r *refBatch
		if !refDecode(body, &r) {
			b.Fatal("refused")
		}
	}
}

// BenchmarkEncodeResults* compare the appender with encoding/json on a
// full batch reply.
func BenchmarkEncodeResultsAppend(b *testing.B) {
	rs := make([]itemResult, ledger.MaxBatch)
	for i := range rs {
		rs[i] = itemResult{id: "b-" + itoa(i), status: 201}
	}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = append(buf[:0], `{"results":[`...)
		for i := range rs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendResult(buf, &rs[i])
		}
		buf = append(buf, `]}`...)
	}
}

func BenchmarkEncodeResultsEncodingJSON(b *testing.B) {
	type item struct {
		ID     string `json:"id"`
		Status int    `json:"status"`
		Code   string `json:"code,omitempty"`
		Detail string `json:"detail,omitempty"`
	}
	rs := make([]item, ledger.MaxBatch)
	for i := range rs {
		rs[i] = item{ID: "b-" + itoa(i), Status: 201}
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := json.NewEncoder(&buf).Encode(map[string][]item{"results": rs}); err != nil {
			b.Fatal(err)
		}
	}
}
