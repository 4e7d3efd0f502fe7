package telemetry

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// MiddlewareOptions configure a Middleware.
type MiddlewareOptions struct {
	// Meter receives every request of a workload; its workload names are
	// the ones Rules refer to. Nil means a Meter of Workloads.
	Meter *Meter
	// Rules assign requests to workloads; nil means DefaultRules.
	Rules []Rule
	// Logger gets one record per request at debug level. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Registerer, if not nil, receives per-workload request counters and
	// latency histograms (one Middleware per registry).
	Registerer prometheus.Registerer
	// TracerProvider, if not nil, traces the workloads' requests: a server
	// span per request, continuing a W3C traceparent the client sent.
	TracerProvider trace.TracerProvider
}

// Middleware gives each request an id, measures it for its workload and,
// when tracing is on, wraps it in a span.
type Middleware struct {
	next     http.Handler
	meter    *Meter
	class    classifier
	log      *slog.Logger
	series   []workloadSeries // by workload index; empty without a Registerer
	traced   bool
	tracer   trace.Tracer // nil unless traced
	provider trace.TracerProvider
	entry    http.Handler // serve, or serve inside a span
}

// NewMiddleware returns next behind a Middleware. next may be nil if the
// Middleware is only used through Wrap and Fast.
func NewMiddleware(next http.Handler, opts MiddlewareOptions) *Middleware {
	m := &Middleware{next: next, meter: opts.Meter, log: opts.Logger}
	if m.meter == nil {
		m.meter = NewMeter(Workloads...)
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	rules := opts.Rules
	if rules == nil {
		rules = DefaultRules
	}
	m.class = newClassifier(rules, m.meter)
	if opts.Registerer != nil {
		m.series = newWorkloadSeries(opts.Registerer, m.meter.Workloads())
	}
	if opts.TracerProvider != nil {
		m.traced = true
		m.tracer = opts.TracerProvider.Tracer(instrumentation)
		m.provider = opts.TracerProvider
	}
	m.entry = m.newEntry()
	return m
}

// Wrap returns next behind a middleware that shares m's meter, series and
// tracing: one server's net/http handlers, wrapped apart.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	c := *m
	c.next = next
	c.entry = c.newEntry()
	return &c
}

// newEntry returns serve, inside a span when tracing.
func (m *Middleware) newEntry() http.Handler {
	entry := http.Handler(http.HandlerFunc(m.serve))
	if !m.traced {
		return entry
	}
	return otelhttp.NewHandler(entry, "surge",
		otelhttp.WithTracerProvider(m.provider),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
		// Scrapes, health checks and the dashboard's stream are noise.
		otelhttp.WithFilter(func(r *http.Request) bool { return m.class.classify(r) >= 0 }))
}

// Meter returns the Meter the middleware feeds.
func (m *Middleware) Meter() *Meter { return m.meter }

// ServeHTTP serves r through the middleware.
func (m *Middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.entry.ServeHTTP(w, r) }

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sc := newScope(w, r)
	m.next.ServeHTTP(sc, r)
	m.finish(sc, r, time.Since(start))
	sc.release()
}

// finish records a served request.
func (m *Middleware) finish(sc *scope, r *http.Request, d time.Duration) {
	status := sc.finalStatus()
	m.record(m.class.classify(r), status, d)
	ctx := r.Context()
	if m.traced {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("surge.request_id", sc.id()))
	}
	if m.log.Enabled(ctx, slog.LevelDebug) {
		m.log.LogAttrs(ctx, slog.LevelDebug, "request",
			slog.String("request_id", sc.id()), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.Duration("duration", d), slog.String("remote", r.RemoteAddr))
	}
}

// record counts a request of workload (none if negative).
func (m *Middleware) record(workload, status int, d time.Duration) {
	if workload < 0 {
		return
	}
	failed := status >= 500
	m.meter.Record(workload, d, failed)
	if m.series != nil {
		m.series[workload].observe(d, failed)
	}
}

// workloadSeries are one workload's Prometheus series, resolved once.
type workloadSeries struct {
	failures prometheus.Counter
	latency  prometheus.Observer // its _count counts requests
}

func (s workloadSeries) observe(d time.Duration, failed bool) {
	if failed {
		s.failures.Inc()
	}
	s.latency.Observe(d.Seconds())
}

// workloadLatencyBuckets run from 50 µs to 10 s, as the ledger's per-route
// histograms do: a group-committed write takes about a millisecond, a
// reservation's long-poll up to ten seconds.
var workloadLatencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

func newWorkloadSeries(reg prometheus.Registerer, workloads []string) []workloadSeries {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "surge_workload_failures_total",
		Help: "Requests answered with a 5xx status, by workload.",
	}, []string{"workload"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "surge_workload_request_duration_seconds",
		Help:    "Time to serve a request, by workload (ledger, tickets, kv, wallet); _count counts requests.",
		Buckets: workloadLatencyBuckets,
	}, []string{"workload"})
	reg.MustRegister(failures, latency)
	out := make([]workloadSeries, len(workloads))
	for i, w := range workloads {
		out[i] = workloadSeries{failures.WithLabelValues(w), latency.WithLabelValues(w)}
	}
	return out
}
