package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestClassifyTrailingSlashRule(t *testing.T) {
	c := newClassifier([]Rule{{"/rpc/", WorkloadWallet}}, NewMeter(Workloads...))
	for path, want := range map[string]int{"/rpc/wallet.Wallet/Transfer": 3, "/rpc/": 3, "/rpc": -1, "/rpcx/y": -1} {
		if got := c.classify(httptest.NewRequest("POST", path, nil)); got != want {
			t.Errorf("classify(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	c := newClassifier(DefaultRules, NewMeter(Workloads...))
	cases := []struct {
		path, contentType, want string
	}{
		{"/v1/transfers", "", WorkloadLedger},
		{"/v1/transfers/batch", "", WorkloadLedger},
		{"/v1/accounts/alice/transfers", "", WorkloadLedger},
		{"/v1/ledger/stats", "", WorkloadLedger},
		{"/v1/event", "", WorkloadTickets},
		{"/v1/event/concert/reservation", "", WorkloadTickets},
		{"/v1/reservation/0b7c", "", WorkloadTickets},
		{"/v0/entity", "", WorkloadKV},
		{"/v0/entities", "", WorkloadKV},
		{"/surge.wallet.v1.WalletService/Transfer", "application/grpc", WorkloadWallet},
		{"/surge.wallet.v1.WalletService/GetBalance", "application/json", WorkloadWallet}, // Connect
		{"/surge.wallet.v1.ChatService/SendMessage", "application/grpc-web+proto", WorkloadWallet},
		{"/surge.wallet.v1.ChatService/Subscribe", "application/grpc", ""}, // a stream
		{"/grpc.health.v1.Health/Check", "application/grpc", ""},
		{"/surge.walletx/y", "application/grpc", ""},
		{"/v1/events", "", ""},     // a prefix is a whole segment
		{"/v1/transfersx", "", ""}, // likewise
		{"/metrics", "", ""},       // no workload
		{"/", "", ""},              // the dashboard
		{"/v0", "", WorkloadKV},
		{"/v0x", "", ""},
		{"/healthz", "text/plain", ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		got := ""
		if i := c.classify(r); i >= 0 {
			got = Workloads[i]
		}
		if got != tc.want {
			t.Errorf("classify(%s, %q) = %q, want %q", tc.path, tc.contentType, got, tc.want)
		}
	}
}

// serveWith runs h behind a Middleware on a real server.
func serveWith(t *testing.T, h http.Handler, opts MiddlewareOptions) (*Middleware, *httptest.Server) {
	t.Helper()
	m := NewMiddleware(h, opts)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv
}

func get(t *testing.T, url string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// echoID answers with the request id the handler sees, and the status the
// path asks for.
var echoID = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	if strings.HasSuffix(r.URL.Path, "/fail") {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Seen-Id", RequestID(w))
	w.WriteHeader(status)
})

func TestRequestIDFromClientIsEchoed(t *testing.T) {
	_, srv := serveWith(t, echoID, MiddlewareOptions{})
	resp := get(t, srv.URL+"/v1/transfers", http.Header{RequestIDHeader: {"abc-123.x:y_z"}})
	if got := resp.Header.Get(RequestIDHeader); got != "abc-123.x:y_z" {
		t.Errorf("echoed id %q", got)
	}
	if got := resp.Header.Get("Seen-Id"); got != "abc-123.x:y_z" {
		t.Errorf("handler saw id %q", got)
	}
}

func TestRequestIDMintedAndSentOn5xx(t *testing.T) {
	_, srv := serveWith(t, echoID, MiddlewareOptions{})
	ok := get(t, srv.URL+"/v1/transfers", nil)
	if got := ok.Header.Get(RequestIDHeader); got != "" {
		t.Errorf("a 200 without a client id carries %s %q", RequestIDHeader, got)
	}
	seen := map[string]bool{}
	for range 3 {
		// An id the client sent but that is unsafe to echo is replaced.
		resp := get(t, srv.URL+"/v1/transfers/fail", http.Header{RequestIDHeader: {"bad id"}})
		id := resp.Header.Get(RequestIDHeader)
		if id == "" || id != resp.Header.Get("Seen-Id") {
			t.Fatalf("5xx reply id %q, handler saw %q", id, resp.Header.Get("Seen-Id"))
		}
		if seen[id] {
			t.Fatalf("id %q minted twice", id)
		}
		seen[id] = true
	}
}

func TestValidRequestID(t *testing.T) {
	for id, want := range map[string]bool{
		"":                      false,
		"a":                     true,
		strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false,
		"0b7c-11ef.9a:2_x":      true,
		"with space":            false,
		"new\nline":             false,
		"ünïcode":               false,
		"quote\"":               false,
	} {
		if got := validRequestID(id); got != want {
			t.Errorf("validRequestID(%q) = %v", id, got)
		}
	}
}

func TestRequestIDOutsideMiddleware(t *testing.T) {
	if got := RequestID(httptest.NewRecorder()); got != "" {
		t.Errorf("RequestID of a plain writer = %q", got)
	}
}

func TestMeteringAgreesWithPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, srv := serveWith(t, echoID, MiddlewareOptions{Registerer: reg})
	for range 5 {
		get(t, srv.URL+"/v1/transfers", nil)
	}
	get(t, srv.URL+"/v1/transfers/fail", nil)
	get(t, srv.URL+"/v0/entity", nil)
	get(t, srv.URL+"/metrics", nil) // no workload: not counted
	stats := m.Meter().Take()
	byName := map[string]WindowStats{}
	for _, s := range stats {
		byName[s.Workload] = s
	}
	if l := byName[WorkloadLedger]; l.Requests != 6 || l.Errors != 1 || l.Total != 6 || l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
		t.Errorf("ledger window %+v", l)
	}
	if kv := byName[WorkloadKV]; kv.Requests != 1 || kv.Errors != 0 {
		t.Errorf("kv window %+v", kv)
	}
	ledgerCount := `
# HELP surge_workload_failures_total Requests answered with a 5xx status, by workload.
# TYPE surge_workload_failures_total counter
surge_workload_failures_total{workload="kv"} 0
surge_workload_failures_total{workload="ledger"} 1
surge_workload_failures_total{workload="tickets"} 0
surge_workload_failures_total{workload="wallet"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(ledgerCount), "surge_workload_failures_total"); err != nil {
		t.Error(err)
	}
	if n := histogramCount(t, reg, "surge_workload_request_duration_seconds", WorkloadLedger); n != 6 {
		t.Errorf("surge_workload_request_duration_seconds_count{ledger} = %d", n)
	}
	if n, err := testutil.GatherAndCount(reg, "surge_workload_request_duration_seconds"); err != nil || n != len(Workloads) {
		t.Errorf("latency series: %d, %v", n, err)
	}
	next := m.Meter().Take()
	if l := next[m.Meter().Index(WorkloadLedger)]; l.Requests != 0 || l.Total != 6 || l.P99 != 0 {
		t.Errorf("after a second Take, ledger window %+v", l)
	}
}

func TestStreamingThroughMiddleware(t *testing.T) {
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "not a flusher", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "one\n")
		f.Flush()
		<-r.Context().Done() // hold the stream open until the client reads
	})
	_, srv := serveWith(t, stream, MiddlewareOptions{})
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "one\n" {
		t.Fatalf("read %q, %v: the flush did not reach the client", line, err)
	}
}

func TestDebugAccessLog(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelDebug, LogJSON)
	_, srv := serveWith(t, echoID, MiddlewareOptions{Logger: log})
	get(t, srv.URL+"/v1/accounts/a", http.Header{RequestIDHeader: {"req-42"}})
	out := buf.String()
	for _, want := range []string{`"msg":"request"`, `"request_id":"req-42"`, `"path":"/v1/accounts/a"`, `"status":200`} {
		if !strings.Contains(out, want) {
			t.Errorf("access log lacks %s: %s", want, out)
		}
	}
}

func TestTracedRequests(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var inner trace.SpanContext
	h := http.NewServeMux()
	h.HandleFunc("POST /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		_, span := tp.Tracer("test").Start(r.Context(), "engine.Transfer")
		inner = span.SpanContext()
		span.End()
		w.WriteHeader(http.StatusCreated)
	})
	h.HandleFunc("GET /metrics", func(http.ResponseWriter, *http.Request) {})
	_, srv := serveWith(t, h, MiddlewareOptions{TracerProvider: tp})

	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest("POST", srv.URL+"/v1/transfers", strings.NewReader("{}"))
	req.Header.Set("traceparent", parent)
	req.Header.Set(RequestIDHeader, "r-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	get(t, srv.URL+"/metrics", nil)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the server span and its child (none for /metrics)", len(spans))
	}
	server := spans[1]
	if server.Name() != "POST /v1/transfers" || server.SpanKind() != trace.SpanKindServer {
		t.Errorf("server span %q kind %v", server.Name(), server.SpanKind())
	}
	if got := server.SpanContext().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace id %s: the client's traceparent was not continued", got)
	}
	if spans[0].Parent().SpanID() != server.SpanContext().SpanID() || inner.TraceID() != server.SpanContext().TraceID() {
		t.Errorf("handler span is not the server span's child")
	}
	found := false
	for _, a := range server.Attributes() {
		if a.Key == "surge.request_id" && a.Value.AsString() == "r-1" {
			found = true
		}
	}
	if !found {
		t.Errorf("server span lacks surge.request_id: %v", server.Attributes())
	}
}

// histogramCount returns the sample count of the histogram name's series
// for workload.
func histogramCount(t *testing.T, reg *prometheus.Registry, name, workload string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "workload" && l.GetValue() == workload {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	t.Fatalf("no %s{workload=%q}", name, workload)
	return 0
}
