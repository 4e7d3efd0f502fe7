package report

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// maxExamplesShown bounds the examples of each kind the text shows (the
// JSON has up to MaxSeatExamples).
const maxExamplesShown = 3

// SpikeReport is the spike scenario's own part of a Result: what the
// replies sold, when, and whether the server agrees.
type SpikeReport struct {
	// Shape describes the stock: "4 events × 100 areas × 20×20 seats".
	Shape    string `json:"shape"`
	Capacity int64  `json:"capacity"`
	// Processing summarises each reservation's server processing time:
	// the sum over its exchanges (POST, GET, retries) of the time from
	// sending a request to having its reply.
	Processing Latency `json:"processing_ms"`
	// Reservations counts final reservations by state, and FAILED ones by
	// reason code: "RESERVED", "FAILED NOT_AVAILABLE".
	Reservations map[string]int64 `json:"reservations"`
	// Retries counts requests sent again after a 503; Shed counts the 503
	// overloaded replies among them, requests the server refused at once
	// (a long poll that ran out is a 503 not_decided).
	Retries int64 `json:"retries_503"`
	Shed    int64 `json:"shed_503"`
	// SeatsSold counts the seats of RESERVED replies; Areas spreads them.
	SeatsSold int64      `json:"seats_sold"`
	Areas     AreaSpread `json:"areas"`
	// LastSale is when the last RESERVED reply arrived, from the start;
	// with every seat sold it is the sold-out time. Nil if none was sold.
	LastSale *measure.Seconds `json:"last_sale_s,omitempty"`
	// ServerSeatsSold sums the events' per-area "sold" counts (-1 if
	// unknown); ServerSoldOut is the latest of the events' soldOutAt,
	// from the start, if every event reports one.
	ServerSeatsSold int64            `json:"server_seats_sold"`
	ServerSoldOut   *measure.Seconds `json:"server_sold_out_s,omitempty"`
	// DoubleBookings counts seats that two RESERVED replies both hold.
	DoubleBookings        int64           `json:"double_bookings"`
	DoubleBookingExamples []DoubleBooking `json:"double_booking_examples,omitempty"`
	SeatMaps              SeatMapCheck    `json:"seat_maps"`
	// ServerPeakRSS is the largest resident set size the server reported
	// (process_resident_memory_bytes on /metrics, sampled each second), or
	// -1 if unknown.
	ServerPeakRSS int64 `json:"server_peak_rss_bytes"`
	// ServerCPU is the CPU time the server used from the start of the run
	// to its end, in seconds (process_cpu_seconds_total on /metrics, read
	// before and after), or -1 if unknown.
	ServerCPU float64 `json:"server_cpu_s"`
	// HTTP2 is what the server did to the connections of an --http2 run.
	HTTP2 *SpikeHTTP2 `json:"http2,omitempty"`
}

// SpikeHTTP2 is an --http2 run's connections and what the server did to
// them while the requests ran.
type SpikeHTTP2 struct {
	Conns int `json:"conns"`
	httpc.H2Events
	// Ceiling is the same client's run against an empty Go h2c handler,
	// when asked for (--ceiling).
	Ceiling *SpikeCeiling `json:"ceiling,omitempty"`
}

// SpikeCeiling is what the spike's client shape (a POST, then a GET, by
// the same VUs over as many connections) did against an empty Go h2c
// handler in the load generator's process, right after the spike.
type SpikeCeiling struct {
	Elapsed      measure.Seconds `json:"elapsed_s"`
	Iterations   int64           `json:"iterations"`
	Failed       int64           `json:"failed"`
	IterationsPS float64         `json:"iterations_per_s"`
	Latency      Latency         `json:"latency_ms"`
	// Share is the spike's iterations per second over the ceiling's.
	Share float64 `json:"share"`
	// CPU is the CPU time the empty handler's process used, in seconds
	// (0 or less: unknown; it ran in the load generator's process).
	CPU float64 `json:"cpu_s"`
}

// AreaSpread is how the sold seats spread over the areas.
type AreaSpread struct {
	MinSold int64 `json:"min_sold"`
	MaxSold int64 `json:"max_sold"`
	// Unsold counts the areas with seats left; UnsoldList names the first.
	Unsold     int        `json:"unsold"`
	UnsoldList []AreaSold `json:"unsold_list,omitempty"`
}

// AreaSold is one area's sales.
type AreaSold struct {
	Event    string `json:"event"`
	Area     string `json:"area"`
	Sold     int64  `json:"sold"`
	Capacity int64  `json:"capacity"`
}

// SoldOut reports whether the replies sold every seat.
func (s *SpikeReport) SoldOut() bool { return s.SeatsSold == s.Capacity }

// err says why the run's sales are wrong: a double booking, or a
// disagreement with the server's seat maps that failed requests cannot
// explain. failedRequests is the run's count of failed requests.
func (s *SpikeReport) err(failedRequests int64) error {
	m := s.SeatMaps
	var problems []string
	if n := s.DoubleBookings + m.DoubleBooked; n > 0 {
		problems = append(problems, fmt.Sprintf("%d double bookings", n))
	}
	if m.Missing > 0 {
		problems = append(problems, fmt.Sprintf("%d seats of RESERVED replies free on the server", m.Missing))
	}
	if m.Unreported > 0 && failedRequests == 0 {
		problems = append(problems, fmt.Sprintf("%d seats taken on the server without a RESERVED reply", m.Unreported))
	}
	if m.Inconsistent > 0 {
		problems = append(problems, fmt.Sprintf("%d areas with inconsistent seat maps", m.Inconsistent))
	}
	if m.Errors > 0 {
		problems = append(problems, fmt.Sprintf("%d seat maps unreadable", m.Errors))
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("bench: spike: " + strings.Join(problems, ", "))
}

// spikeRows are the spike's lines of the summary and the Markdown report.
func spikeRows(r *Result) [][2]string {
	s := r.Spike
	l, p := r.Latency, s.Processing
	rows := [][2]string{
		{"stock", fmt.Sprintf("%s = %s seats", s.Shape, units.Thousands(s.Capacity))},
		{"reservation_latency", percentiles(l)},
		{"server_processing", percentiles(p)},
		{"completion_time", units.K6Duration(r.Totals.Elapsed.Duration())},
		{"sold_out", SoldOutText(s)},
		{"seats_sold", seatsSoldText(s)},
		{"reservations", outcomesText(s.Reservations)},
		{"retries_503", fmt.Sprintf("%s (%s shed: overloaded)", units.Thousands(s.Retries), units.Thousands(s.Shed))},
		{"double_bookings", doubleBookingText(s)},
		{"server_peak_rss", RSSText(s.ServerPeakRSS)},
		{"server_cpu", ServerCPUText(s, r.Totals.Iterations)},
	}
	if h := s.HTTP2; h != nil {
		rows = append(rows,
			[2]string{"http2_connections", fmt.Sprintf("%d, %s dials", h.Conns, units.Thousands(h.Dials))},
			[2]string{"http2_goaways", outcomesText(h.GoAways)},
			[2]string{"http2_stream_resets", outcomesText(h.Resets)},
			[2]string{"http2_connections_lost", outcomesText(h.ConnErrors)})
		if c := h.Ceiling; c != nil {
			rows = append(rows, [2]string{"h2c_ceiling", fmt.Sprintf("%s iterations/s, %s failed, %s; the spike ran at %s of it%s",
				units.Rate(c.IterationsPS), units.Thousands(c.Failed), percentiles(c.Latency), units.Percent(c.Share), ceilingCPUText(c))})
		}
	}
	return rows
}

// ServerCPUText is the server's CPU time over the run and per reservation
// (iteration: a POST and its GET, with their retries).
func ServerCPUText(s *SpikeReport, iterations int64) string {
	if s.ServerCPU < 0 || iterations <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f s, %.1f µs per reservation", s.ServerCPU, s.ServerCPUPerReservation(iterations))
}

// ceilingCPUText is the empty handler's CPU time per iteration, when it
// is known, as server_cpu gives the server's per reservation.
func ceilingCPUText(c *SpikeCeiling) string {
	if c.CPU <= 0 || c.Iterations <= 0 {
		return ""
	}
	return fmt.Sprintf("; its CPU %.2f s, %.1f µs per iteration", c.CPU, c.CPU/float64(c.Iterations)*1e6)
}

// ServerCPUPerReservation is the server's CPU time per reservation in
// microseconds.
func (s *SpikeReport) ServerCPUPerReservation(iterations int64) float64 {
	return s.ServerCPU / float64(iterations) * 1e6
}

func percentiles(l Latency) string {
	return fmt.Sprintf("p(50)=%s p(95)=%s p(99)=%s max=%s", units.K6Duration(units.MsDuration(l.Med)), units.K6Duration(units.MsDuration(l.P95)),
		units.K6Duration(units.MsDuration(l.P99)), units.K6Duration(units.MsDuration(l.Max)))
}

// SoldOutText says whether and when the run sold every seat.
func SoldOutText(s *SpikeReport) string {
	server := "the server reports no soldOutAt"
	if s.ServerSoldOut != nil {
		server = "server's soldOutAt at " + units.K6Duration(s.ServerSoldOut.Duration())
	}
	switch {
	case s.LastSale == nil:
		return "no seat sold; " + server
	case s.SoldOut():
		return "at " + units.K6Duration(s.LastSale.Duration()) + " (last RESERVED reply); " + server
	}
	return fmt.Sprintf("no: %s seats left; last sale at %s; %s", units.Thousands(s.Capacity-s.SeatsSold), units.K6Duration(s.LastSale.Duration()), server)
}

func seatsSoldText(s *SpikeReport) string {
	server := "server unknown"
	if s.ServerSeatsSold >= 0 {
		server = "server " + units.Thousands(s.ServerSeatsSold)
	}
	out := fmt.Sprintf("%s of %s (%s); per area min=%s max=%s", units.Thousands(s.SeatsSold), units.Thousands(s.Capacity), server,
		units.Thousands(s.Areas.MinSold), units.Thousands(s.Areas.MaxSold))
	if a := s.Areas; a.Unsold > 0 {
		listed := make([]string, min(len(a.UnsoldList), maxExamplesShown))
		for i, u := range a.UnsoldList[:len(listed)] {
			listed[i] = fmt.Sprintf("%s/%s %d/%d", u.Event, u.Area, u.Sold, u.Capacity)
		}
		more := ""
		if a.Unsold > len(listed) {
			more = fmt.Sprintf(", %d more", a.Unsold-len(listed))
		}
		out += fmt.Sprintf("; %d areas not sold out: %s%s", a.Unsold, strings.Join(listed, ", "), more)
	}
	return out
}

// outcomesText lists the reservation outcomes, RESERVED first, then the
// most frequent.
func outcomesText(counts map[string]int64) string {
	rank := func(k string) int {
		if k == "RESERVED" {
			return 0
		}
		return 1
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + units.Thousands(counts[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "  ")
}

func doubleBookingText(s *SpikeReport) string {
	m := s.SeatMaps
	out := fmt.Sprintf("%d in the replies", s.DoubleBookings)
	for _, d := range s.DoubleBookingExamples[:min(len(s.DoubleBookingExamples), maxExamplesShown)] {
		out += "; e.g. " + d.String()
	}
	out += fmt.Sprintf("; seat maps of %d areas: %s seats taken, %d double booked, %d missing, %d unreported, %d inconsistent, %d unreadable",
		m.Areas, units.Thousands(m.Taken), m.DoubleBooked, m.Missing, m.Unreported, m.Inconsistent, m.Errors)
	for _, e := range m.Examples[:min(len(m.Examples), maxExamplesShown)] {
		out += "; e.g. " + e
	}
	return out
}

// writeSpikeSummary adds the spike's lines to a summary.
func writeSpikeSummary(b *strings.Builder, r *Result) {
	b.WriteString("\n")
	for _, row := range spikeRows(r) {
		writeRow(b, row[0], []string{row[1]}, nil)
	}
}

// writeSpikeMarkdown adds the spike's table to a Markdown report.
func writeSpikeMarkdown(b *strings.Builder, r *Result) {
	mdMetricTable(b, "Spike", spikeRows(r))
}

// DoubleBooking is one seat sold twice.
type DoubleBooking struct {
	Event string `json:"event"`
	Area  string `json:"area"`
	Row   int    `json:"row"`
	Col   int    `json:"col"`
	// Reservations are the two reservations that both hold the seat.
	Reservations [2]string `json:"reservations"`
}

func (d DoubleBooking) String() string {
	return fmt.Sprintf("%s/%s seat (%d, %d) held by %s and %s", d.Event, d.Area, d.Row, d.Col, d.Reservations[0], d.Reservations[1])
}

// SeatMapCheck compares the replies with the seat maps the server shows
// after the run (GET /v1/event/{id}/area/{areaId}).
type SeatMapCheck struct {
	// Areas counts the areas compared; Errors those that could not be read.
	Areas  int   `json:"areas"`
	Errors int64 `json:"errors"`
	// Taken counts the seats the server lists as taken.
	Taken int64 `json:"taken"`
	// DoubleBooked counts seats the server lists twice, or holds for a
	// reservation other than the one whose RESERVED reply had them.
	DoubleBooked int64 `json:"double_booked"`
	// Missing counts seats of RESERVED replies that the server shows free.
	Missing int64 `json:"missing"`
	// Unreported counts seats taken on the server with no RESERVED reply:
	// expected only for requests that failed on the way back.
	Unreported int64 `json:"unreported"`
	// Inconsistent counts areas whose seat map, available count and taken
	// list disagree with each other or with the area's size.
	Inconsistent int64    `json:"inconsistent"`
	Examples     []string `json:"examples,omitempty"`
}

// Example keeps one more example of a seat problem, up to MaxSeatExamples.
func (c *SeatMapCheck) Example(format string, args ...any) {
	if len(c.Examples) < MaxSeatExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// MaxSeatExamples bounds the examples a report keeps of each kind of
// seat problem.
const MaxSeatExamples = 10

// RSSText formats a peak RSS in bytes, or "unknown" where it is negative.
func RSSText(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return units.SIBytes(float64(b))
}
