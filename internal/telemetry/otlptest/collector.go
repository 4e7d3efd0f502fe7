// Package otlptest is an OTLP/HTTP trace receiver for tests: point an
// exporter (or surge's --otlp-endpoint) at an httptest server of a
// Collector and read back the spans it was sent.
package otlptest

import (
	"io"
	"net/http"
	"sync"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Collector keeps the spans of every export posted to /v1/traces. It is
// safe for concurrent use.
type Collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

// ServeHTTP receives one protobuf export; anything else is a 400.
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Named returns the spans received called name, in arrival order.
func (c *Collector) Named(name string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}
