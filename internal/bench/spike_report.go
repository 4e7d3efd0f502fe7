package bench

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Targets from SPEC §8 for the spike scenario.
const (
	TargetSpikeCompletion = 30 * time.Second
	TargetSpikeP99        = 3 * time.Second
	TargetSpikeRSS        = 1 << 30
)

// maxUnsoldListed bounds the areas a report lists as not sold out;
// maxExamplesShown the examples of each kind the text shows (the JSON has
// up to maxSeatExamples).
const (
	maxUnsoldListed  = 10
	maxExamplesShown = 3
)

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
	// Retries counts requests sent again after a 503.
	Retries int64 `json:"retries_503"`
	// SeatsSold counts the seats of RESERVED replies; Areas spreads them.
	SeatsSold int64      `json:"seats_sold"`
	Areas     AreaSpread `json:"areas"`
	// LastSale is when the last RESERVED reply arrived, from the start;
	// with every seat sold it is the sold-out time. Nil if none was sold.
	LastSale *Seconds `json:"last_sale_s,omitempty"`
	// ServerSeatsSold sums the events' per-area "sold" counts (-1 if
	// unknown); ServerSoldOut is the latest of the events' soldOutAt,
	// from the start, if every event reports one.
	ServerSeatsSold int64    `json:"server_seats_sold"`
	ServerSoldOut   *Seconds `json:"server_sold_out_s,omitempty"`
	// DoubleBookings counts seats that two RESERVED replies both hold.
	DoubleBookings        int64           `json:"double_bookings"`
	DoubleBookingExamples []DoubleBooking `json:"double_booking_examples,omitempty"`
	SeatMaps              SeatMapCheck    `json:"seat_maps"`
	// ServerPeakRSS is the largest resident set size the server reported
	// (process_resident_memory_bytes on /metrics, sampled each second), or
	// -1 if unknown.
	ServerPeakRSS int64 `json:"server_peak_rss_bytes"`
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

// report gathers the workers' tallies and the seat book once the run
// (which started at start) is over, and the sales curve into sales.
func (s *spikeRun) report(start time.Time, peakRSS int64, sales *SalesTally) *SpikeReport {
	c := s.cfg
	r := &SpikeReport{
		Shape:           fmt.Sprintf("%d events × %d areas × %d×%d seats", c.Events, c.Areas, c.Rows, c.Cols),
		Capacity:        int64(len(s.plan.areas) * c.Rows * c.Cols),
		Reservations:    map[string]int64{},
		ServerSeatsSold: -1,
		ServerPeakRSS:   peakRSS,
	}
	var lastSale time.Time
	for _, v := range s.vus {
		v.flush()
		addCounts(r.Reservations, v.tally.outcomes)
		r.Retries += v.tally.retries
		if v.tally.lastSale.After(lastSale) {
			lastSale = v.tally.lastSale
		}
		for _, sold := range v.tally.sales {
			sales.Add(sold.at, sold.seats)
		}
	}
	r.Processing = latencyOf(s.proc)
	if !lastSale.IsZero() {
		r.LastSale = secondsPtr(lastSale.Sub(start))
	}
	r.DoubleBookings, r.DoubleBookingExamples = s.book.doubleBookings()
	r.SeatsSold, r.Areas = s.spread()
	return r
}

// spread tallies the seats the replies sold per area.
func (s *spikeRun) spread() (total int64, spread AreaSpread) {
	capacity := int64(s.cfg.Rows * s.cfg.Cols)
	spread.MinSold = capacity
	for a, area := range s.plan.areas {
		sold := s.book.sold(a)
		total += sold
		spread.MinSold = min(spread.MinSold, sold)
		spread.MaxSold = max(spread.MaxSold, sold)
		if sold < capacity {
			spread.Unsold++
			if len(spread.UnsoldList) < maxUnsoldListed {
				spread.UnsoldList = append(spread.UnsoldList, AreaSold{Event: area.event, Area: area.id, Sold: sold, Capacity: capacity})
			}
		}
	}
	return total, spread
}

func secondsPtr(d time.Duration) *Seconds {
	s := ToSeconds(d)
	return &s
}

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

// spikeVerdict judges a run against SPEC §8; stalls explain a missed p99.
func spikeVerdict(r *Result, stalls *stallHistograms) *Verdict {
	s := r.Spike
	elapsed, p99 := r.Totals.Elapsed.Duration(), msDuration(r.Latency.P99)
	rssKnown := s.ServerPeakRSS >= 0
	doubles := s.DoubleBookings + s.SeatMaps.DoubleBooked
	return &Verdict{
		Target: fmt.Sprintf("completion ≤ %s, p99 ≤ %s, 0 errors, every seat sold, 0 double bookings, server RSS ≤ 1 GiB",
			k6Duration(TargetSpikeCompletion), k6Duration(TargetSpikeP99)),
		Pass: elapsed <= TargetSpikeCompletion && p99 <= TargetSpikeP99 && r.Totals.Failed == 0 && s.SoldOut() &&
			doubles == 0 && rssKnown && s.ServerPeakRSS <= TargetSpikeRSS,
		Detail: fmt.Sprintf("completed in %s, p99 %s, %s errors, %s of %s seats sold, %d double bookings, server peak RSS %s",
			k6Duration(elapsed.Round(10*time.Millisecond)), k6Duration(p99), thousands(r.Totals.Failed),
			thousands(s.SeatsSold), thousands(s.Capacity), doubles, rssText(s.ServerPeakRSS)) +
			stalls.verdictNote(r, SLOTerm{Name: "p99", Quantile: 0.99, Max: TargetSpikeP99}, r.Latency.P99),
	}
}

func rssText(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return siBytes(float64(b))
}

// spikeRows are the spike's lines of the summary and the Markdown report.
func spikeRows(r *Result) [][2]string {
	s := r.Spike
	l, p := r.Latency, s.Processing
	return [][2]string{
		{"stock", fmt.Sprintf("%s = %s seats", s.Shape, thousands(s.Capacity))},
		{"reservation_latency", percentiles(l)},
		{"server_processing", percentiles(p)},
		{"completion_time", k6Duration(r.Totals.Elapsed.Duration())},
		{"sold_out", soldOutText(s)},
		{"seats_sold", seatsSoldText(s)},
		{"reservations", outcomesText(s.Reservations)},
		{"retries_503", thousands(s.Retries)},
		{"double_bookings", doubleBookingText(s)},
		{"server_peak_rss", rssText(s.ServerPeakRSS)},
	}
}

func percentiles(l Latency) string {
	return fmt.Sprintf("p(50)=%s p(95)=%s p(99)=%s max=%s", k6Duration(msDuration(l.Med)), k6Duration(msDuration(l.P95)),
		k6Duration(msDuration(l.P99)), k6Duration(msDuration(l.Max)))
}

func soldOutText(s *SpikeReport) string {
	server := "the server reports no soldOutAt"
	if s.ServerSoldOut != nil {
		server = "server's soldOutAt at " + k6Duration(s.ServerSoldOut.Duration())
	}
	switch {
	case s.LastSale == nil:
		return "no seat sold; " + server
	case s.SoldOut():
		return "at " + k6Duration(s.LastSale.Duration()) + " (last RESERVED reply); " + server
	}
	return fmt.Sprintf("no: %s seats left; last sale at %s; %s", thousands(s.Capacity-s.SeatsSold), k6Duration(s.LastSale.Duration()), server)
}

func seatsSoldText(s *SpikeReport) string {
	server := "server unknown"
	if s.ServerSeatsSold >= 0 {
		server = "server " + thousands(s.ServerSeatsSold)
	}
	out := fmt.Sprintf("%s of %s (%s); per area min=%s max=%s", thousands(s.SeatsSold), thousands(s.Capacity), server,
		thousands(s.Areas.MinSold), thousands(s.Areas.MaxSold))
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
		parts[i] = k + " " + thousands(counts[k])
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
		m.Areas, thousands(m.Taken), m.DoubleBooked, m.Missing, m.Unreported, m.Inconsistent, m.Errors)
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
	rows := spikeRows(r)
	cells := make([][]string, len(rows))
	for i, row := range rows {
		cells[i] = []string{row[0], mdEscape(row[1])}
	}
	mdTable(b, "Spike", []string{"metric", "value"}, cells)
}
