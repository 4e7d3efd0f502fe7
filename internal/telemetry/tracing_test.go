package telemetry

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/surge-dev/surge/internal/telemetry/otlptest"
)

func TestOTLPExport(t *testing.T) {
	col := &otlptest.Collector{}
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
	for _, name := range []string{"request", "shard.batch", "storage.commit"} {
		if n := len(col.Named(name)); n != 1 {
			t.Errorf("collector got %d spans named %s, want 1", n, name)
		}
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
