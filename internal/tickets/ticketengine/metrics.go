package ticketengine

import "github.com/prometheus/client_golang/prometheus"

// register exports ticketing's metrics to reg: decisions, parked
// long-polls, and seats per event.
func (t *Tickets) register(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	reg.MustRegister(t.outcomes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "surge_reservation_polls_parked",
		Help: "Long-polls waiting for a reservation to be decided.",
	}, func() float64 { return float64(t.ParkedPolls()) }), seatsCollector{t}, outcomesCollector{t.index})
}

var (
	seatsAvailableDesc = prometheus.NewDesc("surge_event_seats_available", "Seats on sale, per event.", []string{"event"}, nil)
	seatsSoldDesc      = prometheus.NewDesc("surge_event_seats_sold", "Seats held or paid, per event.", []string{"event"}, nil)
)

// seatsCollector reads seats per event at scrape time from the published
// area counters.
type seatsCollector struct{ t *Tickets }

func (c seatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- seatsAvailableDesc
	ch <- seatsSoldDesc
}

func (c seatsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ev := range c.t.Events() {
		var available, total int
		for _, a := range ev.Areas {
			available += a.Available
			total += a.Spec.RowCount * a.Spec.ColCount
		}
		ch <- prometheus.MustNewConstMetric(seatsAvailableDesc, prometheus.GaugeValue, float64(available), ev.Spec.EventName)
		ch <- prometheus.MustNewConstMetric(seatsSoldDesc, prometheus.GaugeValue, float64(total-available), ev.Spec.EventName)
	}
}
