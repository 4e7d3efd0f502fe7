package spike

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

// TestSpikeRunReport checks what report makes of the workers' tallies and
// the seat book: the sold-out time is the last RESERVED reply's.
func TestSpikeRunReport(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cfg := DefaultSpikeConfig()
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 1, 2, 2, 4
	s := newSpikeRun(cfg, nil, newSpikePlan(cfg, "e"), "run")
	vus := []spikeTally{
		{outcomes: map[string]int64{"RESERVED": 3, "FAILED NOT_AVAILABLE": 5}, retries: 2, shed: 2, lastSale: start.Add(1500 * time.Millisecond),
			sales: []sale{{start.Add(200 * time.Millisecond), 4}, {start.Add(1200 * time.Millisecond), 2}, {start.Add(1500 * time.Millisecond), 2}}},
		{outcomes: map[string]int64{"RESERVED": 2, "FAILED NOT_OPEN": 1}, lastSale: start.Add(7 * time.Second),
			sales: []sale{{start.Add(900 * time.Millisecond), 2}, {start.Add(7 * time.Second), 2}}},
		{outcomes: map[string]int64{"FAILED NOT_AVAILABLE": 4}, retries: 1},
	}
	for i, tally := range vus {
		v := &spikeVU{s: s, tally: tally, proc: []time.Duration{time.Duration(i+1) * time.Millisecond}}
		s.vus = append(s.vus, v)
	}
	// Area 0 sold out, area 1 half sold.
	s.book.claim(0, seats(0, 0, 0, 1, 0, 2, 0, 3), "a")
	s.book.claim(0, seats(1, 0, 1, 1), "b")
	s.book.claim(0, seats(1, 2, 1, 3), "c")
	s.book.claim(1, seats(0, 1, 0, 2), "d")
	s.book.claim(1, seats(1, 1, 1, 2), "e")

	sales := measure.NewSalesTally(start)
	r := s.report(start, serverSample{peakRSS: 123, cpu: 1.5}, sales)
	wantCurve := salePoints(0, 6, 10, 10, 10, 10, 10, 10, 12)
	if got := sales.Curve(); !reflect.DeepEqual(got, wantCurve) {
		t.Fatalf("sales curve %v; want %v", got, wantCurve)
	}
	if r.Capacity != 16 || r.SeatsSold != 12 || r.SoldOut() {
		t.Fatalf("capacity %d, sold %d, sold out %v", r.Capacity, r.SeatsSold, r.SoldOut())
	}
	wantAreas := report.AreaSpread{MinSold: 4, MaxSold: 8, Unsold: 1, UnsoldList: []report.AreaSold{{Event: "e-0", Area: "1", Sold: 4, Capacity: 8}}}
	if !reflect.DeepEqual(r.Areas, wantAreas) {
		t.Fatalf("areas %+v; want %+v", r.Areas, wantAreas)
	}
	if r.LastSale == nil || *r.LastSale != 7 {
		t.Fatalf("last sale %v; want 7 s", r.LastSale)
	}
	if want := map[string]int64{"RESERVED": 5, "FAILED NOT_AVAILABLE": 9, "FAILED NOT_OPEN": 1}; !reflect.DeepEqual(r.Reservations, want) {
		t.Fatalf("reservations %v; want %v", r.Reservations, want)
	}
	if r.Retries != 3 || r.Shed != 2 || r.ServerPeakRSS != 123 || r.ServerCPU != 1.5 || r.ServerSeatsSold != -1 {
		t.Fatalf("retries %d, shed %d, RSS %d, CPU %g, server sold %d", r.Retries, r.Shed, r.ServerPeakRSS, r.ServerCPU, r.ServerSeatsSold)
	}
	if got := report.ServerCPUText(r, 3); got != "1.50 s, 500000.0 µs per reservation" {
		t.Fatalf("server CPU text %q", got)
	}
	if r.Processing.Min != 1 || r.Processing.Max != 3 || r.Processing.Med != 2 {
		t.Fatalf("processing %+v; want min 1 ms, median 2 ms, max 3 ms", r.Processing)
	}
	if got := report.SoldOutText(r); !strings.HasPrefix(got, "no: 4 seats left; last sale at 7s") {
		t.Fatalf("sold-out text %q", got)
	}

	s.book.claim(1, seats(0, 0, 0, 3, 1, 0, 1, 3), "f")
	r = s.report(start, serverSample{peakRSS: -1, cpu: -1}, measure.NewSalesTally(start))
	if !r.SoldOut() || r.Areas.Unsold != 0 || !strings.HasPrefix(report.SoldOutText(r), "at 7s (last RESERVED reply)") {
		t.Fatalf("sold out %v, unsold %d, text %q", r.SoldOut(), r.Areas.Unsold, report.SoldOutText(r))
	}
	if got := report.ServerCPUText(r, 3); got != "unknown" {
		t.Fatalf("server CPU text %q with the CPU time unknown", got)
	}
}

func TestAddServerEvents(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	soldOut := map[string]string{
		"e-0": `,"soldOutAt":"2026-11-22T10:00:02Z"`,
		"e-1": `,"soldOutAt":"2026-11-22T18:00:05.5+08:00"`,
	}
	// The server forgets e-1's soldOutAt, then every event.
	var e1Open, gone atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/v1/event/")
		if gone.Load() {
			http.NotFound(w, r)
			return
		}
		at := soldOut[name]
		if name == "e-1" && e1Open.Load() {
			at = ""
		}
		fmt.Fprintf(w, `{"eventName":%q,"areas":[{"areaId":"0","sold":3},{"areaId":"1","sold":4}]%s}`, name, at)
	}))
	defer srv.Close()
	client, err := httpc.NewHTTPClient(httpc.HTTPOptions{Target: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cfg := DefaultSpikeConfig()
	cfg.Events = 2
	plan := newSpikePlan(cfg, "e")

	var r report.SpikeReport
	addServerEvents(t.Context(), &r, client, plan, start)
	if r.ServerSeatsSold != 14 || r.ServerSoldOut == nil || *r.ServerSoldOut != 5.5 {
		t.Fatalf("server sold %d, sold out at %v; want 14 and 5.5 s", r.ServerSeatsSold, r.ServerSoldOut)
	}
	e1Open.Store(true)
	r = report.SpikeReport{}
	addServerEvents(t.Context(), &r, client, plan, start)
	if r.ServerSeatsSold != 14 || r.ServerSoldOut != nil {
		t.Fatalf("with one event not sold out: server sold %d, sold out at %v", r.ServerSeatsSold, r.ServerSoldOut)
	}
	gone.Store(true)
	r = report.SpikeReport{ServerSeatsSold: -1}
	addServerEvents(t.Context(), &r, client, plan, start)
	if r.ServerSeatsSold != -1 || r.ServerSoldOut != nil {
		t.Fatalf("with the events unreadable: %d, %v; want unknown", r.ServerSeatsSold, r.ServerSoldOut)
	}
}

func TestMetricValue(t *testing.T) {
	text := []byte("# HELP process_resident_memory_bytes Resident memory size in bytes.\n" +
		"# TYPE process_resident_memory_bytes gauge\n" +
		"process_resident_memory_bytes_total 1\n" +
		"process_resident_memory_bytes 5.12753664e+08\n")
	if v, ok := metricValue(text, rssMetric); !ok || v != 512753664 {
		t.Fatalf("metricValue = %g, %v", v, ok)
	}
	for _, bad := range []string{"", "process_resident_memory_bytes x\n", "go_goroutines 5\n"} {
		if v, ok := metricValue([]byte(bad), rssMetric); ok {
			t.Errorf("metricValue(%q) = %g, true", bad, v)
		}
	}
}

func TestSpikeVerdict(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *report.Result)
		pass   bool
	}{
		{"on target", func(*report.Result) {}, true},
		{"too slow", func(r *report.Result) { r.Totals.Elapsed = 30.5 }, false},
		{"p99 too high", func(r *report.Result) { r.Latency.P99 = 3001 }, false},
		{"an error", func(r *report.Result) { r.Totals.Failed = 1 }, false},
		{"not sold out", func(r *report.Result) { r.Spike.SeatsSold-- }, false},
		{"a double booking", func(r *report.Result) { r.Spike.SeatMaps.DoubleBooked = 1 }, false},
		{"RSS too high", func(r *report.Result) { r.Spike.ServerPeakRSS = 1<<30 + 1 }, false},
		{"RSS unknown", func(r *report.Result) { r.Spike.ServerPeakRSS = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reporttest.SpikeResult()
			tt.change(r)
			if v := spikeVerdict(r, nil); v.Pass != tt.pass {
				t.Fatalf("verdict %+v; want pass %v", v, tt.pass)
			}
		})
	}
}

// salePoints is a sales curve that had sold[i] seats at second i.
func salePoints(sold ...int64) []measure.SalePoint {
	out := make([]measure.SalePoint, len(sold))
	for i, n := range sold {
		out[i] = measure.SalePoint{Second: float64(i), Sold: n}
	}
	return out
}
