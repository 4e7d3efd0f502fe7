package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver that keeps the span names it
// was sent.
type collector struct {
	mu    sync.Mutex
	names []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
			for _, s := range ss.GetSpans() {
				c.names = append(c.names, s.GetName())
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func TestOTLPExport(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	ctx := context.Background()
	tr, err := StartTracing(ctx, TracingConfig{Endpoint: srv.URL, SampleRatio: 1, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !TracingEnabled() || tr.Provider() == nil {
		t.Fatal("tracing is not on")
	}
	reqCtx, reqSpan := StartSpan(ctx, "request")
	link, ok := Link(reqCtx)
	if !ok {
		t.Fatal("no link to a recording span")
	}
	batchCtx, batch := StartBatchSpan(0, 1, nil)
	batch.AddLink(link)
	_, commit := StartSpan(batchCtx, "storage.commit")
	commit.End()
	batch.End()
	reqSpan.End()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if TracingEnabled() {
		t.Error("tracing still on after Shutdown")
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	want := map[string]bool{"request": true, "shard.batch": true, "storage.commit": true}
	for _, n := range col.names {
		delete(want, n)
	}
	if len(want) > 0 {
		t.Errorf("collector got %v; missing %v", col.names, want)
	}
}

func TestTracingOffByDefault(t *testing.T) {
	tr, err := StartTracing(context.Background(), TracingConfig{})
	if err != nil || tr.Provider() != nil || TracingEnabled() {
		t.Fatalf("no endpoint: %v, provider %v, enabled %v", err, tr.Provider(), TracingEnabled())
	}
	if _, ok := Link(context.Background()); ok {
		t.Error("a link from a context without a span")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestTracingConfigErrors(t *testing.T) {
	for _, cfg := range []TracingConfig{
		{Endpoint: "localhost:4318", SampleRatio: 1},
		{Endpoint: "ftp://collector", SampleRatio: 1},
		{Endpoint: "http://localhost:4318", SampleRatio: 1.5},
		{Endpoint: "http://localhost:4318", SampleRatio: -0.1},
		{SampleRatio: 2}, // a bad flag is an error even with tracing off
	} {
		if _, err := StartTracing(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
