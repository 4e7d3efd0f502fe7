package measure

import (
	"runtime"
	"sync/atomic"
	"time"
)

// meterPeriod is how long the stall meter sleeps at a time: its
// resolution, as jHiccup's default.
const meterPeriod = time.Millisecond

// StallMeter watches the machine through one measured phase: a goroutine
// on a thread of its own sleeps meterPeriod again and again and records
// how late each sleep ends (see MachineStalls).
//
// The meter sleeps rather than spins: a spinning thread would see every
// stall to the nanosecond, but it would keep one of the machine's two
// CPUs for itself, taken from the server and the load generator it is
// there to watch. A sleeping thread still sees every stall longer than
// its period, shortened by at most the period: if it has to wait for a CPU
// when its sleep ends, so would any other thread woken then. (So would a
// goroutine of the load generator waiting for one of its GOMAXPROCS: the
// meter's goroutine waits for one too, when others took it during its
// sleep.) Its cost is a wake-up a millisecond (BenchmarkStallMeterTick;
// docs/BENCHMARKS.md, "Method", gives its share of a core), more while the
// machine is loaded, in part because the guest charges time stolen from a
// running thread to that thread; the summary's load generator CPU
// includes it.
//
// Sleeping goes through SleepUntil, whose nanosleep with the thread's
// timer slack cut to a microsecond keeps Go's timer rounding (up to a
// millisecond) out of the figures on Linux; elsewhere that rounding counts
// as stalls.
type StallMeter struct {
	start    time.Time
	tally    *StallTally
	stopping atomic.Bool
	done     chan struct{}
}

// StartStallMeter starts watching.
func StartStallMeter() *StallMeter {
	m := &StallMeter{start: time.Now(), tally: NewStallTally(meterPeriod), done: make(chan struct{})}
	go m.run()
	return m
}

// run sleeps and records until stopped, at least once. The goroutine
// keeps its thread to itself, so that no other goroutine waits behind it
// or moves it to another thread, and never unlocks it: the runtime ends
// the thread, whose timer slack SleepUntil changed, when run returns.
func (m *StallMeter) run() {
	defer close(m.done)
	runtime.LockOSThread()
	for {
		m.tally.Record(meterSleep(meterPeriod))
		if m.stopping.Load() {
			return
		}
	}
}

// meterSleep sleeps for period and returns how much longer it took.
func meterSleep(period time.Duration) time.Duration {
	due := time.Now().Add(period)
	SleepUntil(due)
	return time.Since(due)
}

// stop ends the phase, waits for the meter's goroutine to end and returns
// what the machine took from the phase, and the distributions behind it. A
// nil meter (a phase that never began) reports nil.
func (m *StallMeter) Stop() (*MachineStalls, *StallHistograms) {
	if m == nil {
		return nil, nil
	}
	m.stopping.Store(true)
	<-m.done
	return m.tally.Report(time.Since(m.start))
}
