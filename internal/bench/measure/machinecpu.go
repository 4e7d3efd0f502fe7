package measure

import (
	"bytes"
	"strconv"

	"github.com/surge-dev/surge/internal/bench/units"
)

// MachineCPU is what the whole machine lost of its CPUs during a measured
// phase. On a virtual machine the hypervisor may give a vCPU's time to
// another guest ("steal"): the server and the load generator then wait, and
// their latencies grow, without either being at fault. Figures taken with
// much steal are not comparable with others.
//
// Only steal is reported: the kernel accumulates it from the hypervisor's
// own clock, so none is lost to sampling, whereas the user and system
// columns of /proc/stat are sampled at timer ticks, which a tickless kernel
// stops on idle CPUs: a load of short bursts (a request every few hundred
// microseconds) then reads as almost idle.
type MachineCPU struct {
	// Steal is the share of all CPUs' time the hypervisor took.
	Steal float64 `json:"steal"`
}

// NoisySteal is the share of stolen CPU time above which a run's figures
// should not be compared with a quiet run's (docs/BENCHMARKS.md, "Method",
// says how far runs with more steal moved).
const NoisySteal = 0.05

// String is the summary's reading, such as "6% stolen by the hypervisor
// (not comparable with a quiet run)".
func (m MachineCPU) String() string {
	s := units.Percent0(m.Steal) + " stolen by the hypervisor"
	if m.Steal > NoisySteal {
		s += " (not comparable with a quiet run)"
	}
	return s
}

// CPUTimes are the machine's CPU times, summed over its CPUs, in the
// kernel's clock ticks.
type CPUTimes struct{ total, steal uint64 }

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal, then guest times that user
// already includes. Kernels before 2.6.11 print no steal column; absent
// columns count as zero.
func parseProcStat(data []byte) (CPUTimes, bool) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 5 || string(fields[0]) != "cpu" {
		return CPUTimes{}, false
	}
	var col [8]uint64 // user nice system idle iowait irq softirq steal
	for i, f := range fields[1:min(len(fields), 1+len(col))] {
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return CPUTimes{}, false
		}
		col[i] = v
	}
	var t CPUTimes
	for _, v := range col {
		t.total += v
	}
	t.steal = col[7]
	return t, true
}

// MachineCPUBetween is how the CPUs were spent from a to b; nil when the
// two readings span no time (or either is missing).
func MachineCPUBetween(a, b *CPUTimes) *MachineCPU {
	if a == nil || b == nil || b.total <= a.total {
		return nil
	}
	return &MachineCPU{Steal: float64(b.steal-a.steal) / float64(b.total-a.total)}
}
