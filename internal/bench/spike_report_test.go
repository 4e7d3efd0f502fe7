package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSpikeReportErr(t *testing.T) {
	tests := []struct {
		name   string
		report SpikeReport
		failed int64
		want   string // "" for nil
	}{
		{"clean", SpikeReport{}, 0, ""},
		{"double booking in the replies", SpikeReport{DoubleBookings: 2}, 0, "2 double bookings"},
		{"double booking on the server", SpikeReport{SeatMaps: SeatMapCheck{DoubleBooked: 1}}, 0, "1 double bookings"},
		{"both add up", SpikeReport{DoubleBookings: 2, SeatMaps: SeatMapCheck{DoubleBooked: 1}}, 5, "3 double bookings"},
		{"a sold seat is free", SpikeReport{SeatMaps: SeatMapCheck{Missing: 4}}, 0, "4 seats of RESERVED replies free on the server"},
		{"unreported seats, no failed request", SpikeReport{SeatMaps: SeatMapCheck{Unreported: 3}}, 0, "3 seats taken on the server without a RESERVED reply"},
		{"unreported seats explained by failed requests", SpikeReport{SeatMaps: SeatMapCheck{Unreported: 3}}, 2, ""},
		{"inconsistent seat maps", SpikeReport{SeatMaps: SeatMapCheck{Inconsistent: 1}}, 0, "1 areas with inconsistent seat maps"},
		{"unreadable seat maps", SpikeReport{SeatMaps: SeatMapCheck{Errors: 7}}, 0, "7 seat maps unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.report.err(tt.failed)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err() = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestSpikeRunReport checks what report makes of the workers' tallies and
// the seat book: the sold-out time is the last RESERVED reply's.
func TestSpikeRunReport(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cfg := DefaultSpikeConfig()
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 1, 2, 2, 4
	s := newSpikeRun(cfg, nil, newSpikePlan(cfg, "e"), "run")
	vus := []spikeTally{
		{outcomes: map[string]int64{"RESERVED": 3, "FAILED NOT_AVAILABLE": 5}, retries: 2, lastSale: start.Add(1500 * time.Millisecond),
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

	sales := NewSalesTally(start)
	r := s.report(start, 123, sales)
	wantCurve := []SalePoint{{0, 0}, {1, 6}, {2, 10}, {3, 10}, {4, 10}, {5, 10}, {6, 10}, {7, 10}, {8, 12}}
	if got := sales.Curve(); !reflect.DeepEqual(got, wantCurve) {
		t.Fatalf("sales curve %v; want %v", got, wantCurve)
	}
	if r.Capacity != 16 || r.SeatsSold != 12 || r.SoldOut() {
		t.Fatalf("capacity %d, sold %d, sold out %v", r.Capacity, r.SeatsSold, r.SoldOut())
	}
	wantAreas := AreaSpread{MinSold: 4, MaxSold: 8, Unsold: 1, UnsoldList: []AreaSold{{Event: "e-0", Area: "1", Sold: 4, Capacity: 8}}}
	if !reflect.DeepEqual(r.Areas, wantAreas) {
		t.Fatalf("areas %+v; want %+v", r.Areas, wantAreas)
	}
	if r.LastSale == nil || *r.LastSale != 7 {
		t.Fatalf("last sale %v; want 7 s", r.LastSale)
	}
	if want := map[string]int64{"RESERVED": 5, "FAILED NOT_AVAILABLE": 9, "FAILED NOT_OPEN": 1}; !reflect.DeepEqual(r.Reservations, want) {
		t.Fatalf("reservations %v; want %v", r.Reservations, want)
	}
	if r.Retries != 3 || r.ServerPeakRSS != 123 || r.ServerSeatsSold != -1 {
		t.Fatalf("retries %d, RSS %d, server sold %d", r.Retries, r.ServerPeakRSS, r.ServerSeatsSold)
	}
	if r.Processing.Min != 1 || r.Processing.Max != 3 || r.Processing.Med != 2 {
		t.Fatalf("processing %+v; want min 1 ms, median 2 ms, max 3 ms", r.Processing)
	}
	if got := soldOutText(r); !strings.HasPrefix(got, "no: 4 seats left; last sale at 7s") {
		t.Fatalf("sold-out text %q", got)
	}

	s.book.claim(1, seats(0, 0, 0, 3, 1, 0, 1, 3), "f")
	r = s.report(start, -1, NewSalesTally(start))
	if !r.SoldOut() || r.Areas.Unsold != 0 || !strings.HasPrefix(soldOutText(r), "at 7s (last RESERVED reply)") {
		t.Fatalf("sold out %v, unsold %d, text %q", r.SoldOut(), r.Areas.Unsold, soldOutText(r))
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
	client, err := NewHTTPClient(HTTPOptions{Target: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cfg := DefaultSpikeConfig()
	cfg.Events = 2
	plan := newSpikePlan(cfg, "e")

	var r SpikeReport
	r.addServerEvents(t.Context(), client, plan, start)
	if r.ServerSeatsSold != 14 || r.ServerSoldOut == nil || *r.ServerSoldOut != 5.5 {
		t.Fatalf("server sold %d, sold out at %v; want 14 and 5.5 s", r.ServerSeatsSold, r.ServerSoldOut)
	}
	e1Open.Store(true)
	r = SpikeReport{}
	r.addServerEvents(t.Context(), client, plan, start)
	if r.ServerSeatsSold != 14 || r.ServerSoldOut != nil {
		t.Fatalf("with one event not sold out: server sold %d, sold out at %v", r.ServerSeatsSold, r.ServerSoldOut)
	}
	gone.Store(true)
	r = SpikeReport{ServerSeatsSold: -1}
	r.addServerEvents(t.Context(), client, plan, start)
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
		t.Fatalf("metricValue = %d, %v", v, ok)
	}
	for _, bad := range []string{"", "process_resident_memory_bytes x\n", "go_goroutines 5\n"} {
		if v, ok := metricValue([]byte(bad), rssMetric); ok {
			t.Errorf("metricValue(%q) = %d, true", bad, v)
		}
	}
}

// spikeResult is a finished run's Result as RunSpike would make it.
func spikeResult() *Result {
	last, server := Seconds(6.8), Seconds(6.75)
	return &Result{
		Version:  ResultVersion,
		Scenario: "spike",
		Totals:   Totals{Elapsed: 14.2, Requests: 1_000_000, Iterations: 1_000_000, VUs: 1000},
		Latency:  Latency{Med: 900, P95: 2100, P99: 2800, Max: 4000},
		Failures: map[string]int64{}, OpFailures: map[string]int64{}, FailureExamples: map[string]string{},
		Spike: &SpikeReport{
			Shape:           "4 events × 100 areas × 20×20 seats",
			Capacity:        160_000,
			Processing:      Latency{Med: 850, P95: 2000, P99: 2700, Max: 3900},
			Reservations:    map[string]int64{"FAILED NOT_AVAILABLE": 935_988, "RESERVED": 64_012},
			SeatsSold:       160_000,
			Areas:           AreaSpread{MinSold: 400, MaxSold: 400},
			LastSale:        &last,
			ServerSeatsSold: 160_000,
			ServerSoldOut:   &server,
			SeatMaps:        SeatMapCheck{Areas: 400, Taken: 160_000},
			ServerPeakRSS:   600 << 20,
		},
	}
}

func TestSpikeSummaryAndFiles(t *testing.T) {
	r := spikeResult()
	r.Verdict = spikeVerdict(r, nil)
	var sum bytes.Buffer
	if err := WriteSummary(&sum, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stock..........................: 4 events × 100 areas × 20×20 seats = 160,000 seats",
		"reservation_latency............: p(50)=900ms p(95)=2.1s p(99)=2.8s max=4s",
		"server_processing..............: p(50)=850ms p(95)=2s p(99)=2.7s max=3.9s",
		"completion_time................: 14.2s",
		"sold_out.......................: at 6.8s (last RESERVED reply); server's soldOutAt at 6.75s",
		"seats_sold.....................: 160,000 of 160,000 (server 160,000); per area min=400 max=400\n",
		"reservations...................: RESERVED 64,012  FAILED NOT_AVAILABLE 935,988",
		"double_bookings................: 0 in the replies; seat maps of 400 areas: 160,000 seats taken, 0 double booked, 0 missing, 0 unreported, 0 inconsistent, 0 unreadable",
		"server_peak_rss................: 629 MB",
		"verdict: PASS",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Spike\n\n| metric | value |\n|---|---|\n| stock | 4 events × 100 areas × 20×20 seats = 160,000 seats |") {
		t.Errorf("Markdown lacks the spike table:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spike, r.Spike) {
		t.Fatalf("spike report after a JSON round trip:\n%+v\nwant\n%+v", back.Spike, r.Spike)
	}
}

func TestSpikeVerdict(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *Result)
		pass   bool
	}{
		{"on target", func(*Result) {}, true},
		{"too slow", func(r *Result) { r.Totals.Elapsed = 30.5 }, false},
		{"p99 too high", func(r *Result) { r.Latency.P99 = 3001 }, false},
		{"an error", func(r *Result) { r.Totals.Failed = 1 }, false},
		{"not sold out", func(r *Result) { r.Spike.SeatsSold-- }, false},
		{"a double booking", func(r *Result) { r.Spike.SeatMaps.DoubleBooked = 1 }, false},
		{"RSS too high", func(r *Result) { r.Spike.ServerPeakRSS = 1<<30 + 1 }, false},
		{"RSS unknown", func(r *Result) { r.Spike.ServerPeakRSS = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := spikeResult()
			tt.change(r)
			if v := spikeVerdict(r, nil); v.Pass != tt.pass {
				t.Fatalf("verdict %+v; want pass %v", v, tt.pass)
			}
		})
	}
}
