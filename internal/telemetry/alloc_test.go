//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts are only meaningful without it.

package telemetry

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMiddlewareAllocatesNothingWithoutTracing(t *testing.T) {
	m := NewMiddleware(okHandler, MiddlewareOptions{Registerer: prometheus.NewRegistry()})
	r := httptest.NewRequest("POST", "/v1/transfers", nil)
	w := httptest.NewRecorder()
	m.ServeHTTP(w, r) // warm the pool; the recorder keeps only this first reply
	if n := testing.AllocsPerRun(1000, func() { m.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}
