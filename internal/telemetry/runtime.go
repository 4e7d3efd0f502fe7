package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/procfs"
)

// RegisterRuntime registers the process-wide metrics on reg: the Go runtime
// (memory, goroutines, GC pauses, and the scheduler's latency histogram,
// where time waiting for a CPU shows), the process (CPU, RSS, file
// descriptors), and, on Linux, its context switches and disk I/O — the
// figures the seed reports read from their charts.
func RegisterRuntime(reg prometheus.Registerer) {
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC, collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newProcCollector(),
	)
}

// procCollector exports the process's context switches (getrusage, summed
// over every thread) and disk I/O (/proc/self/io), beyond what
// Prometheus's process collector has. Where either is missing it exports
// nothing for it.
type procCollector struct {
	switches, ioBytes *prometheus.Desc
}

func newProcCollector() *procCollector {
	return &procCollector{
		switches: prometheus.NewDesc("surge_process_context_switches_total",
			"Context switches of the process's threads, by kind: voluntary (blocked, as on fsync or a lock) or involuntary (preempted).",
			[]string{"kind"}, nil),
		ioBytes: prometheus.NewDesc("surge_process_io_bytes_total",
			"Bytes the process made the storage layer read or write, by direction.",
			[]string{"direction"}, nil),
	}
}

// Describe sends the collector's descriptors.
func (c *procCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.switches
	ch <- c.ioBytes
}

// Collect reads the counters now.
func (c *procCollector) Collect(ch chan<- prometheus.Metric) {
	if voluntary, involuntary, ok := contextSwitches(); ok {
		ch <- prometheus.MustNewConstMetric(c.switches, prometheus.CounterValue, float64(voluntary), "voluntary")
		ch <- prometheus.MustNewConstMetric(c.switches, prometheus.CounterValue, float64(involuntary), "involuntary")
	}
	p, err := procfs.Self()
	if err != nil {
		return
	}
	if io, err := p.IO(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.ioBytes, prometheus.CounterValue, float64(io.ReadBytes), "read")
		ch <- prometheus.MustNewConstMetric(c.ioBytes, prometheus.CounterValue, float64(io.WriteBytes), "write")
	}
}
