package dashboard

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/telemetry"
)

// staticEvents is an EventSource of fixed events.
type staticEvents []EventSnapshot

func (s staticEvents) Events() []EventSnapshot { return s }

// staticFeed is a TransferFeed of fixed transfers.
type staticFeed []TransferSummary

func (s staticFeed) Recent(n int) []TransferSummary { return s[:min(n, len(s))] }

var soldOut = time.Date(2026, 11, 22, 12, 0, 7, 0, time.UTC)

var concert = EventSnapshot{
	Name: "concert", OpensAt: soldOut.Add(-7 * time.Second), SoldOutAt: &soldOut,
	Areas: []AreaSnapshot{{ID: "A", Rows: 2, Cols: 3, Sold: 6}, {ID: "B", Rows: 1, Cols: 4, Sold: 4}},
}

var opera = EventSnapshot{Name: "opera", Areas: []AreaSnapshot{{ID: "A", Rows: 2, Cols: 2, Sold: 1, Available: 3}}}

func TestUpdateComputesRates(t *testing.T) {
	m := telemetry.NewMeter(telemetry.Workloads...)
	d := New(Options{Meter: m, History: 2})
	start := time.Now()
	d.last = start
	for range 10 {
		m.Record(0, 2*time.Millisecond, false)
	}
	m.Record(0, 40*time.Millisecond, true)
	d.update(start.Add(2 * time.Second))
	d.update(start.Add(3 * time.Second))
	d.update(start.Add(4 * time.Second))

	f := d.snapshot()
	if len(f.Samples) != 2 {
		t.Fatalf("%d samples kept, want History=2", len(f.Samples))
	}
	first := f.Samples[0].Workloads[0] // the sample of the 11 requests was dropped
	if first.Name != telemetry.WorkloadLedger || first.RPS != 0 || first.Total != 11 || first.TotalErrors != 1 {
		t.Errorf("ledger after an idle second: %+v", first)
	}
	d2 := New(Options{Meter: m})
	d2.last = start
	for range 10 {
		m.Record(1, 3*time.Millisecond, false)
	}
	d2.update(start.Add(2 * time.Second))
	tickets := d2.snapshot().Samples[0].Workloads[1]
	if tickets.Name != telemetry.WorkloadTickets || tickets.RPS != 5 || tickets.P50Ms < 2.9 || tickets.P50Ms > 3.1 || tickets.ErrorsPS != 0 {
		t.Errorf("tickets over 2 s: %+v", tickets)
	}
}

func TestRegisterReplacesByID(t *testing.T) {
	d := New(Options{})
	d.Register(EventsPanel("tickets", "Sales", staticEvents{opera}))
	d.Register(TransfersPanel("ledger", "Transfers", staticFeed{{ID: "t1"}}))
	d.Register(EventsPanel("tickets", "Sales", staticEvents{concert, opera}))
	f := d.snapshot()
	if len(f.Panels) != 2 || f.Panels[0].ID != "tickets" || len(f.Panels[0].Data.([]EventSnapshot)) != 2 {
		t.Errorf("panels %+v", f.Panels)
	}
}

func TestPageAndAssets(t *testing.T) {
	srv := httptest.NewServer(New(Options{}).Handler())
	defer srv.Close()
	for path, want := range map[string]string{
		"/":             "<canvas id=\"throughput\"",
		"/ui/app.js":    "new EventSource(\"/ui/events\")",
		"/ui/style.css": "--ledger",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, lacks %q", path, resp.StatusCode, want)
		}
		if path == "/" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("page CSP %q", resp.Header.Get("Content-Security-Policy"))
		}
	}
	for path, want := range map[string]int{"/ui/missing.js": 404, "/elsewhere": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", resp.StatusCode)
	}
}

// serveAndGet serves d's handler on a test server and GETs path; the body
// is closed when the test ends.
func serveAndGet(t *testing.T, d *Dashboard, path string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readEvent reads one server-sent event's data.
func readEvent(t *testing.T, rd *bufio.Reader) Frame {
	t.Helper()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var f Frame
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return f
		}
	}
}

func TestEventStream(t *testing.T) {
	m := telemetry.NewMeter(telemetry.Workloads...)
	d := New(Options{Meter: m})
	d.Register(EventsPanel("sales", "Sales", staticEvents{concert}))
	d.last = time.Now()
	d.update(d.last.Add(time.Second))
	resp := serveAndGet(t, d, "/ui/events")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	first := readEvent(t, rd)
	if len(first.Samples) != 1 || len(first.Panels) != 1 || first.Panels[0].Kind != KindEvents {
		t.Fatalf("first frame %+v", first)
	}
	// The watcher is registered before the first frame is sent, so this
	// update reaches the stream.
	m.Record(2, time.Millisecond, false)
	d.update(d.last.Add(time.Second))
	next := readEvent(t, rd)
	if len(next.Samples) != 1 || next.Samples[0].Workloads[2].Total != 1 {
		t.Fatalf("update frame %+v", next)
	}
	d.Close()
	if _, err := io.ReadAll(rd); err != nil {
		t.Errorf("stream after Close: %v", err)
	}
}

func TestStateEndpoint(t *testing.T) {
	d := New(Options{})
	d.Register(TransfersPanel("ledger", "Recent transfers", staticFeed{{ID: "t1", From: "a", To: "b", Amount: 5, Currency: "USD", State: "posted"}}))
	resp := serveAndGet(t, d, "/ui/state")
	var raw struct {
		Panels []struct {
			Kind string            `json:"kind"`
			Data []TransferSummary `json:"data"`
		} `json:"panels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Panels) != 1 || raw.Panels[0].Kind != "transfers" || raw.Panels[0].Data[0].To != "b" {
		t.Errorf("state %+v", raw)
	}
}

func TestStartAndClose(t *testing.T) {
	d := New(Options{Interval: time.Millisecond})
	frames, unwatch := d.watch()
	defer unwatch()
	d.Start()
	<-frames // the sampler runs on its own
	d.Close()
	d.Close() // idempotent
}
