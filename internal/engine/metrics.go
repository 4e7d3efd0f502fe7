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

// watchTickets exports the ticketing workload: decisions, parked
// long-polls, and seats per event.
func (m *metrics) watchTickets(e *Engine) {
	if m.reg == nil {
		return
	}
	m.reg.MustRegister(e.tk.outcomes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "surge_reservation_polls_parked",
		Help: "Long-polls waiting for a reservation to be decided.",
	}, func() float64 { return float64(e.ParkedPolls()) }), seatsCollector{e}, outcomesCollector{e.tk.index})
}

var (
	seatsAvailableDesc = prometheus.NewDesc("surge_event_seats_available", "Seats on sale, per event.", []string{"event"}, nil)
	seatsSoldDesc      = prometheus.NewDesc("surge_event_seats_sold", "Seats held or paid, per event.", []string{"event"}, nil)
)

// seatsCollector reads seats per event at scrape time from the published
// area counters.
type seatsCollector struct{ e *Engine }

func (c seatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- seatsAvailableDesc
	ch <- seatsSoldDesc
}

func (c seatsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ev := range c.e.Events() {
		var available, total int
		for _, a := range ev.Areas {
			available += a.Available
			total += a.Spec.RowCount * a.Spec.ColCount
		}
		ch <- prometheus.MustNewConstMetric(seatsAvailableDesc, prometheus.GaugeValue, float64(available), ev.Spec.EventName)
		ch <- prometheus.MustNewConstMetric(seatsSoldDesc, prometheus.GaugeValue, float64(total-available), ev.Spec.EventName)
	}
}
