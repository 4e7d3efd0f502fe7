package telemetry

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to an hour, with two
// significant digits: 1% is finer than any chart shows, and keeps each
// window's histogram to a few kilobytes.
const (
	windowMaxMicros = int64(time.Hour / time.Microsecond)
	windowSigFigs   = 2
)

// Meter counts requests and their latencies per workload, in windows that
// Take closes: the per-second samples of the live dashboard. It is safe for
// concurrent use.
type Meter struct {
	names   []string
	windows []*window
	// takeMu serialises Take: it owns each window's spare histogram.
	takeMu sync.Mutex
}

// window is one workload's open interval.
type window struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram // the open interval
	spare    *hdrhistogram.Histogram // the closed one, reused
	requests int64                   // in the open interval
	errors   int64
	total    int64 // since start
	totalErr int64
}

// NewMeter returns a Meter for the named workloads, indexed in that order.
func NewMeter(workloads ...string) *Meter {
	m := &Meter{names: workloads}
	for range workloads {
		m.windows = append(m.windows, &window{
			hist:  hdrhistogram.New(1, windowMaxMicros, windowSigFigs),
			spare: hdrhistogram.New(1, windowMaxMicros, windowSigFigs),
		})
	}
	return m
}

// Workloads returns the workload names, in index order.
func (m *Meter) Workloads() []string { return m.names }

// Index returns the index of workload name, or -1.
func (m *Meter) Index(name string) int {
	for i, n := range m.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Record counts one request of workload i that took d; failed marks a
// server-side failure (a 5xx).
func (m *Meter) Record(i int, d time.Duration, failed bool) {
	w := m.windows[i]
	us := min(max(d.Microseconds(), 1), windowMaxMicros)
	w.mu.Lock()
	_ = w.hist.RecordValue(us) // cannot fail: us is in range
	w.requests++
	w.total++
	if failed {
		w.errors++
		w.totalErr++
	}
	w.mu.Unlock()
}

// WindowStats are one workload's figures over a closed window.
type WindowStats struct {
	Workload string
	// Requests and Errors counted in the window; Total and TotalErrors
	// since the Meter was made.
	Requests, Errors   int64
	Total, TotalErrors int64
	// Latency percentiles of the window's requests (zero if none).
	P50, P99, Max time.Duration
}

// Take closes every workload's window and opens the next. The caller
// divides the counts by the time since its previous Take for rates.
func (m *Meter) Take() []WindowStats {
	m.takeMu.Lock()
	defer m.takeMu.Unlock()
	out := make([]WindowStats, len(m.windows))
	for i, w := range m.windows {
		out[i] = w.take()
		out[i].Workload = m.names[i]
	}
	return out
}

func (w *window) take() WindowStats {
	w.mu.Lock()
	closed := w.hist
	w.hist, w.spare = w.spare, closed
	s := WindowStats{Requests: w.requests, Errors: w.errors, Total: w.total, TotalErrors: w.totalErr}
	w.requests, w.errors = 0, 0
	w.mu.Unlock()
	// The closed histogram is now the spare, which only Take touches.
	if s.Requests > 0 {
		s.P50 = micros(closed.ValueAtQuantile(50))
		s.P99 = micros(closed.ValueAtQuantile(99))
		s.Max = micros(closed.Max())
	}
	closed.Reset()
	return s
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
