package spike

import (
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Targets for the spike scenario (docs/BENCHMARKS.md, "Targets").
const (
	TargetSpikeCompletion = 30 * time.Second
	TargetSpikeP99        = 3 * time.Second
	TargetSpikeRSS        = 1 << 30
)

// maxUnsoldListed bounds the areas a report lists as not sold out.
const maxUnsoldListed = 10

// report gathers the workers' tallies, the seat book and what the server's
// metrics said once the run (which started at start) is over, and the
// sales curve into sales.
func (s *spikeRun) report(start time.Time, server serverSample, sales *measure.SalesTally) *report.SpikeReport {
	c := s.cfg
	r := &report.SpikeReport{
		Shape:           fmt.Sprintf("%d events × %d areas × %d×%d seats", c.Events, c.Areas, c.Rows, c.Cols),
		Capacity:        int64(len(s.plan.areas) * c.Rows * c.Cols),
		Reservations:    map[string]int64{},
		ServerSeatsSold: -1,
		ServerPeakRSS:   server.peakRSS,
		ServerCPU:       server.cpu,
	}
	var lastSale time.Time
	for _, v := range s.vus {
		v.flush()
		measure.AddCounts(r.Reservations, v.tally.outcomes)
		r.Retries += v.tally.retries
		r.Shed += v.tally.shed
		if v.tally.lastSale.After(lastSale) {
			lastSale = v.tally.lastSale
		}
		for _, sold := range v.tally.sales {
			sales.Add(sold.at, sold.seats)
		}
	}
	r.Processing = report.LatencyOf(s.proc)
	if !lastSale.IsZero() {
		r.LastSale = secondsPtr(lastSale.Sub(start))
	}
	r.DoubleBookings, r.DoubleBookingExamples = s.book.doubleBookings()
	r.SeatsSold, r.Areas = s.spread()
	return r
}

// spread tallies the seats the replies sold per area.
func (s *spikeRun) spread() (total int64, spread report.AreaSpread) {
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
				spread.UnsoldList = append(spread.UnsoldList, report.AreaSold{Event: area.event, Area: area.id, Sold: sold, Capacity: capacity})
			}
		}
	}
	return total, spread
}

func secondsPtr(d time.Duration) *measure.Seconds {
	s := measure.ToSeconds(d)
	return &s
}

// spikeVerdict judges a run against its targets; stalls explain a missed p99.
func spikeVerdict(r *report.Result, stalls *measure.StallHistograms) *report.Verdict {
	s := r.Spike
	elapsed, p99 := r.Totals.Elapsed.Duration(), units.MsDuration(r.Latency.P99)
	rssKnown := s.ServerPeakRSS >= 0
	doubles := s.DoubleBookings + s.SeatMaps.DoubleBooked
	return &report.Verdict{
		Target: fmt.Sprintf("completion ≤ %s, p99 ≤ %s, 0 errors, every seat sold, 0 double bookings, server RSS ≤ 1 GiB",
			units.K6Duration(TargetSpikeCompletion), units.K6Duration(TargetSpikeP99)),
		Pass: elapsed <= TargetSpikeCompletion && p99 <= TargetSpikeP99 && r.Totals.Failed == 0 && s.SoldOut() &&
			doubles == 0 && rssKnown && s.ServerPeakRSS <= TargetSpikeRSS,
		Detail: fmt.Sprintf("completed in %s, p99 %s, %s errors, %s of %s seats sold, %d double bookings, server peak RSS %s",
			units.K6Duration(elapsed.Round(10*time.Millisecond)), units.K6Duration(p99), units.Thousands(r.Totals.Failed),
			units.Thousands(s.SeatsSold), units.Thousands(s.Capacity), doubles, report.RSSText(s.ServerPeakRSS)) +
			report.StallVerdictNote(stalls, r, report.SLOTerm{Name: "p99", Quantile: 0.99, Max: TargetSpikeP99}, r.Latency.P99),
	}
}
