package dashboard

import "github.com/prometheus/client_golang/prometheus"

// SeatsCollector exports src's seats per event for Prometheus, read at
// each scrape: surge_event_seats{event, state="sold"|"available"}, and
// surge_event_sold_out_timestamp_seconds for events that sold out.
func SeatsCollector(src EventSource) prometheus.Collector {
	return &seatsCollector{
		src: src,
		seats: prometheus.NewDesc("surge_event_seats",
			"Seats of a ticketed event, by state: sold or available.", []string{"event", "state"}, nil),
		soldOut: prometheus.NewDesc("surge_event_sold_out_timestamp_seconds",
			"When a ticketed event's last seat sold, in Unix seconds.", []string{"event"}, nil),
	}
}

type seatsCollector struct {
	src            EventSource
	seats, soldOut *prometheus.Desc
}

// Describe sends the collector's descriptors.
func (c *seatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.seats
	ch <- c.soldOut
}

// Collect reads the events now.
func (c *seatsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ev := range c.src.Events() {
		var sold, available int
		for _, a := range ev.Areas {
			sold += a.Sold
			available += a.Available
		}
		ch <- prometheus.MustNewConstMetric(c.seats, prometheus.GaugeValue, float64(sold), ev.Name, "sold")
		ch <- prometheus.MustNewConstMetric(c.seats, prometheus.GaugeValue, float64(available), ev.Name, "available")
		if ev.SoldOutAt != nil {
			ch <- prometheus.MustNewConstMetric(c.soldOut, prometheus.GaugeValue, float64(ev.SoldOutAt.UnixMilli())/1e3, ev.Name)
		}
	}
}
