package e2e

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/surge-dev/surge/internal/telemetry/otlptest"
)

// TestDashboardTracingToCollector runs the binary with an OTLP endpoint and
// checks that a transfer's trace reaches the collector: the server span of
// the request, continuing the client's traceparent, with the engine call
// as its child, the shard batch below it and the storage commit below that.
func TestDashboardTracingToCollector(t *testing.T) {
	col := &otlptest.Collector{}
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

	servers, engines := col.Named("POST /v1/transfers"), col.Named("ledger.Transfer")
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
	// The shard batch that applied it: the engine call's child (its one
	// sampled request), with the storage commit as its own child.
	batches, commits := col.Named("shard.batch"), col.Named("storage.commit")
	if len(batches) != 1 || len(commits) != 1 {
		t.Fatalf("collector got %d shard.batch and %d storage.commit spans, want 1 each", len(batches), len(commits))
	}
	if !bytes.Equal(batches[0].GetParentSpanId(), engine.GetSpanId()) || !bytes.Equal(batches[0].GetTraceId(), server.GetTraceId()) {
		t.Error("shard.batch is not the engine call's child")
	}
	if !bytes.Equal(commits[0].GetParentSpanId(), batches[0].GetSpanId()) {
		t.Error("storage.commit is not the shard batch's child")
	}
	if n := len(col.Named("POST /v1/accounts")); n != 0 {
		t.Errorf("%d spans of an unsampled request (sampling 0, no traceparent)", n)
	}
}
