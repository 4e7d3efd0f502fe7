package measure

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkStallMeterTick measures what the stall meter costs: the CPU
// time of its thread per sleep (cpu-ns/tick; it ticks once a millisecond,
// so 20,000 cpu-ns/tick is 2% of one core).
func BenchmarkStallMeterTick(b *testing.B) {
	// Locked as the meter's own thread is, and left locked so the thread,
	// its timer slack changed, ends with the benchmark.
	runtime.LockOSThread()
	tally := NewStallTally(meterPeriod)
	cpu0 := threadCPU(b)
	for b.Loop() {
		tally.Record(meterSleep(meterPeriod))
	}
	b.ReportMetric(float64(threadCPU(b)-cpu0)/float64(b.N), "cpu-ns/tick")
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
