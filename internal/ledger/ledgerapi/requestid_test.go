package ledgerapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/telemetry"
)

// TestFaultLogCarriesRequestID: behind the telemetry middleware, a server
// fault's log record names the request id the client gets back.
func TestFaultLogCarriesRequestID(t *testing.T) {
	ta := newTestAPI(t, "")
	ta.fake.err = errors.New("disk on fire")
	h := telemetry.NewMiddleware(ta.Handler(), telemetry.MiddlewareOptions{})

	for _, clientID := range []string{"fault-7", ""} {
		r := httptest.NewRequest("POST", "/v1/transfers", strings.NewReader(`{"from":"a","to":"b","amount":1}`))
		if clientID != "" {
			r.Header.Set(telemetry.RequestIDHeader, clientID)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		id := w.Header().Get(telemetry.RequestIDHeader)
		if w.Code != 500 || id == "" || (clientID != "" && id != clientID) {
			t.Fatalf("client id %q: status %d, reply id %q", clientID, w.Code, id)
		}
		if !strings.Contains(ta.logs.String(), "request_id="+id+" ") {
			t.Errorf("fault log lacks request_id=%s: %s", id, ta.logs)
		}
	}
}

// BenchmarkTransferBehindMiddleware is BenchmarkTransfer behind the
// telemetry middleware as surge serves it with tracing off: the difference
// is what the middleware costs the ledger's hot path.
func BenchmarkTransferBehindMiddleware(b *testing.B) {
	reg := prometheus.NewRegistry()
	api := New(nopLedger{&fakeLedger{}}, Options{Registry: reg})
	h := telemetry.NewMiddleware(api.Handler(), telemetry.MiddlewareOptions{Registerer: reg})
	benchHandler(b, h, "/v1/transfers", transferBody, 201)
}
