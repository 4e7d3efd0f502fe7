package e2e

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpCollector receives OTLP/HTTP trace exports and keeps the spans.
type otlpCollector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

// named returns the spans called name.
func (c *otlpCollector) named(name string) []*tracepb.Span {
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

// TestDashboardTracingToCollector runs the binary with an OTLP endpoint and
// checks that a transfer's trace reaches the collector: the server span of
// the request, continuing the client's traceparent, with the engine call
// as its child.
func TestDashboardTracingToCollector(t *testing.T) {
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	s := start(t, t.TempDir(), "--otlp-endpoint", srv.URL, "--trace-sample", "0")
	openAccounts(t, s.c, "tr-a")

	// Sampling 0: only the client's sampled traceparent makes a trace.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/transfers",
		bytes.NewReader([]byte(`{"id":"tr-1","from":"@world","to":"tr-a","amount":5}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("transfer: %d", resp.StatusCode)
	}
	s.stop() // flushes the spans still buffered

	servers, engines := col.named("POST /v1/transfers"), col.named("ledger.Transfer")
	if len(servers) != 1 || len(engines) != 1 {
		t.Fatalf("collector got %d server and %d engine spans of the transfer, want 1 each", len(servers), len(engines))
	}
	server, engine := servers[0], engines[0]
	if got := hex.EncodeToString(server.GetTraceId()); got != traceID {
		t.Errorf("trace id %s: the client's traceparent was not continued", got)
	}
	if !bytes.Equal(engine.GetParentSpanId(), server.GetSpanId()) || !bytes.Equal(engine.GetTraceId(), server.GetTraceId()) {
		t.Error("ledger.Transfer is not the server span's child")
	}
	if n := len(col.named("POST /v1/accounts")); n != 0 {
		t.Errorf("%d spans of an unsampled request (sampling 0, no traceparent)", n)
	}
}
