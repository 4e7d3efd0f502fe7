// Package dashboard is surge's live web dashboard, served at "/": requests
// per second and p50/p99 latency per workload, and the panels workloads
// plug in (recent transfers, a heatmap of each event's sales), pushed to
// the page once per second over server-sent events.
//
// Every asset is embedded in the binary and the page loads nothing from
// elsewhere, so it works on a machine with no network.
package dashboard

import (
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/telemetry"
)

// Options configure a Dashboard.
type Options struct {
	// Meter is sampled once per Interval for the per-workload figures.
	Meter *telemetry.Meter
	// Interval between updates; 0 means one second.
	Interval time.Duration
	// History is how many samples a page gets when it opens, so its charts
	// start full; 0 means 300 (five minutes at one per second).
	History int
	// Logger receives failures to encode an update. Nil: slog.Default().
	Logger *slog.Logger
}

// Sample is one interval of the per-workload figures.
type Sample struct {
	// Time is the end of the interval, in Unix milliseconds.
	Time      int64            `json:"t"`
	Workloads []WorkloadSample `json:"workloads"`
}

// WorkloadSample is one workload's figures over an interval.
type WorkloadSample struct {
	Name string `json:"name"`
	// RPS and ErrorsPS are requests and 5xx replies per second.
	RPS      float64 `json:"rps"`
	ErrorsPS float64 `json:"errors_ps"`
	// P50Ms, P99Ms and MaxMs are latencies of the interval's requests.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Total and TotalErrors count since the server started.
	Total       int64 `json:"total"`
	TotalErrors int64 `json:"total_errors"`
}

// Frame is what the page receives: in the first frame every kept sample,
// then the newest one, and each panel's current data.
type Frame struct {
	Samples []Sample     `json:"samples"`
	Panels  []panelFrame `json:"panels"`
}

// Dashboard samples the server's figures and streams them to open pages.
type Dashboard struct {
	meter    *telemetry.Meter
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	panels   []Panel
	samples  []Sample // oldest first, at most history
	history  int
	last     time.Time // when the meter was last taken
	watchers map[chan []byte]struct{}
	started  bool

	stop chan struct{} // closed by Close: ends sampling and streams
	done chan struct{} // closed when sampling has ended
	once sync.Once
}

// New returns a Dashboard; Start begins sampling.
func New(opts Options) *Dashboard {
	d := &Dashboard{
		meter:    opts.Meter,
		interval: opts.Interval,
		log:      opts.Logger,
		history:  opts.History,
		watchers: map[chan []byte]struct{}{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if d.interval <= 0 {
		d.interval = time.Second
	}
	if d.history <= 0 {
		d.history = 300
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.meter == nil {
		d.meter = telemetry.NewMeter(telemetry.Workloads...)
	}
	return d
}

// Register adds a panel, or replaces the one with the same ID.
func (d *Dashboard) Register(p Panel) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.IndexFunc(d.panels, func(q Panel) bool { return q.ID == p.ID }); i >= 0 {
		d.panels[i] = p
		return
	}
	d.panels = append(d.panels, p)
}

// Start samples every interval until Close.
func (d *Dashboard) Start() {
	d.mu.Lock()
	d.last = time.Now()
	d.started = true
	d.mu.Unlock()
	go d.run()
}

// Close stops sampling and ends every open stream, so that a graceful
// shutdown need not wait for pages to go away.
func (d *Dashboard) Close() {
	d.once.Do(func() { close(d.stop) })
	d.mu.Lock()
	started := d.started
	d.mu.Unlock()
	if started {
		<-d.done
	}
}

func (d *Dashboard) run() {
	defer close(d.done)
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			d.update(now)
		case <-d.stop:
			return
		}
	}
}

// update takes a sample, encodes the newest frame and sends it to every
// watcher.
func (d *Dashboard) update(now time.Time) {
	stats := d.meter.Take()
	d.mu.Lock()
	elapsed := now.Sub(d.last).Seconds()
	d.last = now
	s := newSample(now, stats, elapsed)
	d.samples = append(d.samples, s)
	if len(d.samples) > d.history {
		d.samples = slices.Delete(d.samples, 0, len(d.samples)-d.history)
	}
	panels := slices.Clone(d.panels)
	d.mu.Unlock()

	frame, err := json.Marshal(Frame{Samples: []Sample{s}, Panels: panelFrames(panels)})
	if err != nil {
		d.log.Error("dashboard: encoding an update", "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for ch := range d.watchers {
		// A page that has not taken the previous frame gets this one
		// instead: it only ever needs the newest.
		select {
		case <-ch:
		default:
		}
		ch <- frame
	}
}

func newSample(now time.Time, stats []telemetry.WindowStats, elapsed float64) Sample {
	s := Sample{Time: now.UnixMilli(), Workloads: make([]WorkloadSample, len(stats))}
	for i, w := range stats {
		s.Workloads[i] = WorkloadSample{
			Name:        w.Workload,
			RPS:         rate(w.Requests, elapsed),
			ErrorsPS:    rate(w.Errors, elapsed),
			P50Ms:       ms(w.P50),
			P99Ms:       ms(w.P99),
			MaxMs:       ms(w.Max),
			Total:       w.Total,
			TotalErrors: w.TotalErrors,
		}
	}
	return s
}

func rate(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func panelFrames(panels []Panel) []panelFrame {
	out := make([]panelFrame, len(panels))
	for i, p := range panels {
		out[i] = panelFrame{ID: p.ID, Title: p.Title, Kind: p.Kind, Data: p.data()}
	}
	return out
}

// snapshot is the frame a page opens with: every kept sample and the
// panels' current data.
func (d *Dashboard) snapshot() Frame {
	d.mu.Lock()
	samples := slices.Clone(d.samples)
	panels := slices.Clone(d.panels)
	d.mu.Unlock()
	return Frame{Samples: samples, Panels: panelFrames(panels)}
}

// watch subscribes to new frames; the returned func unsubscribes.
func (d *Dashboard) watch() (<-chan []byte, func()) {
	ch := make(chan []byte, 1)
	d.mu.Lock()
	d.watchers[ch] = struct{}{}
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		delete(d.watchers, ch)
		d.mu.Unlock()
	}
}
