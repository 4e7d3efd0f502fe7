package load

import (
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// clock wakes the senders of an open-model run at their due times, all
// from one goroutine.
//
// Why not let each sender sleep: a sender waiting in a nanosleep system
// call keeps its processor (P), and with many of them doing so the others'
// Go timers wait for the runtime's monitor to take a P back, which it
// checks only now and then once the process looks idle: the wait showed
// up in the p99 of runs against an empty handler. A timerfd per sender
// wakes on time but costs each request its own system calls. One clock
// on one periodic timerfd wakes on time, holds no P while it waits, and
// serves every request due by the time it wakes with that one wake-up.
type clock struct {
	sched schedule
	// wake holds, per sender, the index of its latest request due; a
	// sender still busy with an earlier request finds it there when it
	// comes back.
	wake []chan int
	// seen is, per sender, the latest index it took from wake; only that
	// sender's goroutine touches it.
	seen []int
}

// schedule is when an open-model run's requests are due: request j at
// first + j intervals, by sender j mod senders, so that the senders'
// requests interleave evenly. The interval is a whole number of
// nanoseconds, so that the clock's ticks, a whole number of intervals
// apart, never drift from the requests' due times.
type schedule struct {
	first    time.Time
	interval time.Duration
	senders  int
}

func newSchedule(first time.Time, rate float64, senders int) schedule {
	return schedule{first: first, interval: max(time.Duration(float64(time.Second)/rate), 1), senders: senders}
}

// due is when request j is due.
func (s schedule) due(j int) time.Time { return s.first.Add(time.Duration(j) * s.interval) }

// minTick is the shortest period the clock wakes at. Above one request
// per minTick, it wakes every few requests' due times and sends the
// requests due since: a wake-up per request would cost the load generator
// more CPU than the requests themselves.
const minTick = 20 * time.Microsecond

// perTick is how many requests fall due between two of the clock's ticks.
func (s schedule) perTick() int { return int((minTick + s.interval - 1) / s.interval) }

func newClock(s schedule) *clock {
	c := &clock{sched: s, wake: make([]chan int, s.senders), seen: make([]int, s.senders)}
	for i := range c.wake {
		c.wake[i] = make(chan int, 1)
		c.seen[i] = -1
	}
	return c
}

// run wakes each request's sender at its due time until end, or until stop
// is set; then it closes the wake-ups, and a sender still waiting on one
// sleeps by itself.
func (c *clock) run(end time.Time, stop *atomic.Bool) {
	defer func() {
		for _, w := range c.wake {
			close(w)
		}
	}()
	per := c.sched.perTick()
	t := measure.NewTicker(c.sched.first, time.Duration(per)*c.sched.interval)
	defer t.Close()
	for j := 0; ; {
		// Every request due by the latest tick goes now, late by less
		// than a tick: its latency counts from when it was due.
		last := t.Wait() * per
		if due := c.sched.due(last); time.Now().Before(due) {
			// The tick was set on the kernel's clock from Go's, read a
			// moment apart: it may come a microsecond early.
			measure.SleepUntil(due)
		}
		for ; j <= last; j++ {
			if !c.sched.due(j).Before(end) || stop.Load() {
				return
			}
			w := c.wake[j%c.sched.senders]
			select {
			case <-w: // the sender is behind: this request replaces the one it has yet to take
			default:
			}
			w <- j // the clock is the only sender: there is room now
		}
	}
}

// await returns once request j of sender, or a later one of the same
// sender, is due.
func (c *clock) await(sender, j int) {
	for c.seen[sender] < j {
		k, open := <-c.wake[sender]
		if !open {
			measure.SleepUntil(c.sched.due(j))
			return
		}
		c.seen[sender] = k
	}
}
