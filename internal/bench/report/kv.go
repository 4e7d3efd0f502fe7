package report

import (
	"fmt"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// KVReport is what only the kv scenario reports.
type KVReport struct {
	// Rate is the rate requests were due at, per second.
	Rate float64 `json:"rate"`
	Op   string  `json:"op"`
	// Unsent counts requests due in the run that were never sent: their
	// connection was still waiting for earlier replies when it ended.
	Unsent int64 `json:"unsent"`
	// Misses counts GETs answered 404 (answers, not failures).
	Misses int64 `json:"misses"`
	// LatencyStdevMs and WithinStdev are wrk2's Stdev and +/- Stdev.
	LatencyStdevMs float64 `json:"latency_stdev_ms"`
	WithinStdev    float64 `json:"within_stdev"`
	// SLO and Probes are set by a --find-max search: every rate tried;
	// SLOMs holds the latency at each of the SLO's quantiles, by name.
	SLO    string             `json:"slo,omitempty"`
	SLOMs  map[string]float64 `json:"slo_ms,omitempty"`
	Probes []KVProbe          `json:"probes,omitempty"`
}

// KVProbe is one rate a --find-max search tried.
type KVProbe struct {
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved_rps"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	P999Ms   float64 `json:"p99_9_ms"`
	MaxMs    float64 `json:"max_ms"`
	Failed   int64   `json:"failed"`
	Unsent   int64   `json:"unsent"`
	Pass     bool    `json:"pass"`
	// Why says what a failed probe missed.
	Why string `json:"why,omitempty"`
	// MachineCPU is the CPU time stolen from the machine during the probe: a
	// tail percentile missed while the hypervisor stole CPU time may be the
	// machine's, not the server's.
	MachineCPU *measure.MachineCPU `json:"machine_cpu,omitempty"`
	// Stalls is what the machine itself took from the probe, and Machine
	// says which missed bounds its stalls alone would have broken.
	Stalls  *measure.MachineStalls `json:"machine_stalls,omitempty"`
	Machine string                 `json:"machine,omitempty"`
}

// String is the probe's line in the search's log.
func (p KVProbe) String() string {
	verdict := "PASS"
	if !p.Pass {
		verdict = "FAIL (" + p.whyAll() + ")"
	}
	machine := ""
	if p.Stalls != nil {
		machine = ", stalled " + units.Percent(p.Stalls.StalledShare)
	}
	if m := p.MachineCPU; m != nil {
		machine += ", steal " + units.Percent0(m.Steal)
	}
	return fmt.Sprintf("rate %s/s → %s/s, p50 %s, p99 %s, p99.9 %s, max %s, %d failed, %d unsent%s: %s",
		units.Rate(p.Rate), units.Rate(p.Achieved), units.K6Duration(units.MsDuration(p.P50Ms)), units.K6Duration(units.MsDuration(p.P99Ms)),
		units.K6Duration(units.MsDuration(p.P999Ms)), units.K6Duration(units.MsDuration(p.MaxMs)), p.Failed, p.Unsent, machine, verdict)
}

// whyAll is what a failed probe missed and, if they explain it, the
// machine's stalls.
func (p KVProbe) whyAll() string {
	if p.Machine == "" {
		return p.Why
	}
	return p.Why + "; " + p.Machine
}
