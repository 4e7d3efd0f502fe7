// Package reporttest builds the results the load lab's tests judge.
package reporttest

import (
	"regexp"
	"time"

	"github.com/surge-dev/surge/internal/bench/benchtest"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
)

// StalledResult is a result whose machine stalled as SyntheticStalls,
// and the stalls' distributions.
func StalledResult(vus int, requests int64) (*report.Result, *measure.StallHistograms) {
	stalls, hists := benchtest.SyntheticStalls().Report(1250 * time.Millisecond)
	return &report.Result{Totals: report.Totals{VUs: vus, Requests: requests}, MachineStalls: stalls}, hists
}

// spikeResult is a finished run's Result as RunSpike would make it.
// SpikeResult is a spike run on target: a million requests sold out
// 160,000 seats.
func SpikeResult() *report.Result {
	last, server := measure.Seconds(6.8), measure.Seconds(6.75)
	return &report.Result{
		Version:  report.ResultVersion,
		Scenario: "spike",
		Totals:   report.Totals{Elapsed: 14.2, Requests: 1_000_000, Iterations: 1_000_000, VUs: 1000},
		Latency:  report.Latency{Med: 900, P95: 2100, P99: 2800, Max: 4000},
		Failures: map[string]int64{}, OpFailures: map[string]int64{}, FailureExamples: map[string]string{},
		Spike: &report.SpikeReport{
			Shape:           "4 events × 100 areas × 20×20 seats",
			Capacity:        160_000,
			Processing:      report.Latency{Med: 850, P95: 2000, P99: 2700, Max: 3900},
			Reservations:    map[string]int64{"FAILED NOT_AVAILABLE": 935_988, "RESERVED": 64_012},
			SeatsSold:       160_000,
			Areas:           report.AreaSpread{MinSold: 400, MaxSold: 400},
			LastSale:        &last,
			ServerSeatsSold: 160_000,
			ServerSoldOut:   &server,
			SeatMaps:        report.SeatMapCheck{Areas: 400, Taken: 160_000},
			ServerPeakRSS:   600 << 20,
		},
	}
}

// ExternalRef finds anything a page would load: a src or href attribute,
// a CSS url() or @import. A self-contained report has none.
var ExternalRef = regexp.MustCompile(`(?i)\b(src|href)\s*=|url\(|@import`)
