package bench

import (
	"sync/atomic"
	"time"
)

// clock wakes the senders of an open-model run at their due times, all
// from one goroutine.
//
// Why not let each sender sleep: a sender waiting in a nanosleep system
// call keeps its processor (P), and with many of them doing so the others'
// Go timers wait for the runtime's monitor to take a P back, which it
// checks only every 10 ms once the process looks idle. Against an empty
// handler at 1,500/s with 16 senders on one connection, that put 10 ms
// into the p99 (docs/BENCHMARKS.md, session 12). A timerfd per sender
// wakes on time but costs each request its own three system calls. One
// clock on one timerfd wakes on time, holds no P while it waits, and
// serves every request due by the time it wakes with that one wake-up.
type clock struct {
	sched schedule
	// wake holds one pending wake-up per sender; a sender still busy with
	// an earlier request finds it there when it comes back.
	wake []chan struct{}
}

// schedule is when an open-model run's requests are due: request j at
// first + j/rate, by sender j mod senders, so that the senders' requests
// interleave evenly.
type schedule struct {
	first   time.Time
	rate    float64
	senders int
}

// due is when request j is due.
func (s schedule) due(j int) time.Time {
	return s.first.Add(time.Duration(float64(j) * float64(time.Second) / s.rate))
}

func newClock(s schedule) *clock {
	c := &clock{sched: s, wake: make([]chan struct{}, s.senders)}
	for i := range c.wake {
		c.wake[i] = make(chan struct{}, 1)
	}
	return c
}

// run wakes each request's sender at its due time until end, or until stop
// is set; then it closes the wake-ups, and a sender still waiting on one
// sleeps by itself.
func (c *clock) run(end time.Time, stop *atomic.Bool) {
	a := newAlarm()
	defer a.close()
	defer func() {
		for _, w := range c.wake {
			close(w)
		}
	}()
	for j := 0; ; j++ {
		due := c.sched.due(j)
		if !due.Before(end) || stop.Load() {
			return
		}
		a.wait(due) // returns at once for a request already due
		select {
		case c.wake[j%c.sched.senders] <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// await returns at due, sender's request time.
func (c *clock) await(sender int, due time.Time) {
	for time.Now().Before(due) {
		if _, open := <-c.wake[sender]; !open {
			sleepUntil(due)
			return
		}
	}
}
