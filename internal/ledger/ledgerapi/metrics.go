package ledgerapi

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the transport's Prometheus collectors.
type metrics struct {
	requests  *prometheus.CounterVec   // route, method, code
	latency   *prometheus.HistogramVec // route, method
	batchSize prometheus.Histogram
}

// latencyBuckets span 50 µs to 10 s: the default buckets start at 5 ms,
// coarser than a whole fsync'd transfer.
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "surge_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern and method.",
			Buckets: latencyBuckets,
		}, []string{"route", "method"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "surge_http_batch_transfers",
			Help:    "Transfers per accepted POST /v1/transfers/batch request.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 … 8192
		}),
	}
	m.requests = register(reg, m.requests)
	m.latency = register(reg, m.latency)
	m.batchSize = register(reg, m.batchSize)
	return m
}

// register adds c to reg, or returns the equal collector already there, so
// that several APIs (in tests, say) can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("ledgerapi: registering metrics: " + err.Error())
}

// routeMetrics are the series of one route, resolved once at start-up so that
// a request costs no label lookup.
type routeMetrics struct {
	m             *metrics
	route, method string
	latency       prometheus.Observer
	// counters[status-100] is filled on first use: the set of statuses a
	// route answers is small but not worth listing here.
	counters [500]atomic.Pointer[prometheus.Counter]
}

func (m *metrics) forRoute(route, method string) *routeMetrics {
	return &routeMetrics{m: m, route: route, method: method, latency: m.latency.WithLabelValues(route, method)}
}

// done records one request that ended with status after starting at start.
func (rm *routeMetrics) done(status int, start time.Time) {
	rm.latency.Observe(time.Since(start).Seconds())
	if status < 100 || status > 599 {
		status = 599 // never happens; keeps the index in range
	}
	p := &rm.counters[status-100]
	c := p.Load()
	if c == nil {
		counter := rm.m.requests.WithLabelValues(rm.route, rm.method, strconv.Itoa(status))
		c = &counter
		p.Store(c)
	}
	(*c).Inc()
}
