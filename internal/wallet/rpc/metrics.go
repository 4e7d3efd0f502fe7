package rpc

import (
	"errors"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets span 50 µs to 10 s, as the HTTP API's do.
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// metrics counts calls per procedure and status code and times them. A
// nil *metrics keeps nothing.
type metrics struct {
	calls   *prometheus.CounterVec   // procedure, code
	latency *prometheus.HistogramVec // procedure
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_rpc_calls_total",
			Help: "Wallet RPC calls, by procedure and gRPC status code (streams count when they end).",
		}, []string{"procedure", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "surge_rpc_call_duration_seconds",
			Help:    "Time to serve a unary wallet RPC, by procedure.",
			Buckets: latencyBuckets,
		}, []string{"procedure"}),
	}
	reg.MustRegister(m.calls, m.latency)
	return m
}

func (m *metrics) observe(procedure string, start time.Time, err error, timed bool) {
	if m == nil {
		return
	}
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	m.calls.WithLabelValues(procedure, code).Inc()
	if timed {
		m.latency.WithLabelValues(procedure).Observe(time.Since(start).Seconds())
	}
}

func errUnknownService(name string) error { return errors.New("unknown service " + name) }
