package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })

// BenchmarkMiddleware is the cost the middleware adds to each request of
// the ledger's hot path with tracing off: compare with BenchmarkBare.
func BenchmarkMiddleware(b *testing.B) {
	m := NewMiddleware(okHandler, MiddlewareOptions{Registerer: prometheus.NewRegistry()})
	benchHandler(b, m)
}

// BenchmarkBare is the handler alone.
func BenchmarkBare(b *testing.B) { benchHandler(b, okHandler) }

func benchHandler(b *testing.B, h http.Handler) {
	r := httptest.NewRequest("POST", "/v1/transfers", nil)
	w := httptest.NewRecorder() // reused: after the first reply it records nothing
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
	if w.Code != http.StatusCreated {
		b.Fatalf("status %d", w.Code)
	}
}

// BenchmarkMiddlewareParallel measures contention on the workload's window
// when every core serves the same workload.
func BenchmarkMiddlewareParallel(b *testing.B) {
	m := NewMiddleware(okHandler, MiddlewareOptions{Registerer: prometheus.NewRegistry()})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("POST", "/v1/transfers", nil)
		w := httptest.NewRecorder()
		for pb.Next() {
			m.ServeHTTP(w, r)
		}
	})
}
