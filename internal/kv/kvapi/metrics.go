package kvapi

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// op is what a request asked for, the label of its metrics.
type op int

const (
	opGet op = iota
	opPut
	opDelete
	opRange
	opOther // refused before its operation was known
	numOps
)

var opNames = [numOps]string{"get", "put", "delete", "range", "other"}

// metrics are the KV transport's Prometheus series, resolved up front so
// that a request costs no label lookup.
type metrics struct {
	requests *prometheus.CounterVec
	latency  [numOps]prometheus.Observer
	// counters holds, per op, the series of every status this API answers;
	// it is read-only once built.
	counters [numOps]map[int]prometheus.Counter
}

// statuses are the codes the API answers with.
var statuses = []int{200, 201, 202, 400, 401, 404, 405, 413, 500}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_kv_requests_total",
			Help: "Key-value (/v0) requests served, by operation and status code.",
		}, []string{"op", "code"}),
	}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "surge_kv_request_duration_seconds",
		Help: "Time to serve a key-value (/v0) request, by operation (a range: until its last entry is sent).",
		// 25 µs to 10 s: a GET from memory takes tens of microseconds.
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 19),
	}, []string{"op"})
	for o := range numOps {
		m.latency[o] = latency.WithLabelValues(opNames[o])
		m.counters[o] = make(map[int]prometheus.Counter, len(statuses))
		for _, st := range statuses {
			m.counters[o][st] = m.requests.WithLabelValues(opNames[o], strconv.Itoa(st))
		}
	}
	if reg != nil {
		reg.MustRegister(m.requests, latency)
	}
	return m
}

// done records one request of o that ended with status after starting at
// start.
func (m *metrics) done(o op, status int, start time.Time) {
	m.latency[o].Observe(time.Since(start).Seconds())
	c, ok := m.counters[o][status]
	if !ok {
		c = m.requests.WithLabelValues(opNames[o], strconv.Itoa(status))
	}
	c.Inc()
}
