package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// sleepUntil returns at t, give or take ten microseconds. An open-model
// connection at 12,000 requests/s has 83 µs between sends, and Go's timers
// (time.Sleep) round any wait shorter than a millisecond up to one when the
// process is otherwise idle, which would delay most sends by up to a
// millisecond and, since latency counts from the scheduled send, show up
// as a millisecond of latency the server never caused. (wrk2's own
// millisecond timers do just that.) So the last stretch of a wait is a
// nanosleep system call, with the thread's timer slack cut from its 50 µs
// default to 1 µs: the goroutine may run on any thread, and the call costs
// less than a microsecond.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		if d > coarseWait {
			time.Sleep(d - time.Millisecond)
			continue
		}
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(time.Microsecond), 0, 0, 0)
		ts := unix.NsecToTimespec(d.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil) // interrupted early: the loop waits again
	}
}

// coarseWait is the wait beyond which time.Sleep's millisecond rounding
// does not matter: it sleeps until a millisecond before.
const coarseWait = 2 * time.Millisecond
