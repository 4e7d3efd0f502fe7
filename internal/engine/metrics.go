package engine

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	batchSize prometheus.Histogram
	syncTime  prometheus.Histogram
	reg       prometheus.Registerer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "surge_shard_batch_commands",
			Help:    "Commands applied per storage commit (group commit size).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		syncTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "surge_storage_commit_seconds",
			Help:    "Time to make one storage batch durable (WAL write and fsync).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14),
		}),
		reg: reg,
	}
	if reg != nil {
		reg.MustRegister(m.batchSize, m.syncTime)
	}
	return m
}

func (m *metrics) observeSync(d time.Duration) { m.syncTime.Observe(d.Seconds()) }

// watchQueues exports each shard's queue depth.
func (m *metrics) watchQueues(shards []*shard) {
	if m.reg == nil {
		return
	}
	for _, s := range shards {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "surge_shard_queue_depth",
			Help:        "Commands waiting in a shard's queue.",
			ConstLabels: prometheus.Labels{"shard": strconv.Itoa(s.id)},
		}, func() float64 { return float64(s.log.Len()) }))
	}
}
