package bench

import (
	"math"
	"time"
)

// wrkTicksPerHalf is the resolution of wrk2's detailed percentile spectrum.
const wrkTicksPerHalf = 5

// StdDevMs is the standard deviation of the latencies, in milliseconds
// (from the histogram: three significant digits).
func (r *Recorder) StdDevMs() float64 {
	if r.counts.Requests == 0 {
		return 0
	}
	return r.hist.StdDev() / 1e3
}

// WithinStdev is the share of latencies within one standard deviation of
// the mean: wrk2's "+/- Stdev" column.
func (r *Recorder) WithinStdev() float64 {
	n := r.hist.TotalCount()
	if n == 0 {
		return 0
	}
	mean, sd := float64(r.Mean()/time.Microsecond), r.hist.StdDev()
	lo, hi := int64(math.Ceil(mean-sd)), int64(math.Floor(mean+sd))
	var in int64
	for _, bar := range r.hist.Distribution() {
		if bar.Count > 0 && bar.From >= lo && bar.To <= hi+1 {
			in += bar.Count
		}
	}
	return float64(in) / float64(n)
}

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
	MachineCPU *MachineCPU `json:"machine_cpu,omitempty"`
	// Stalls is what the machine itself took from the probe, and Machine
	// says which missed bounds its stalls alone would have broken.
	Stalls  *MachineStalls `json:"machine_stalls,omitempty"`
	Machine string         `json:"machine,omitempty"`
}
