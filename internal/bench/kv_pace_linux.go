package bench

import (
	"os"
	"syscall"
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

// alarm waits for a time on a timerfd, registered with Go's network
// poller: the kernel's high-resolution timer makes it readable on time,
// and the poller wakes the waiting goroutine without any thread or P
// sitting in a sleep meanwhile.
type alarm struct {
	f     *os.File // the timerfd
	rc    syscall.RawConn
	fd    int
	buf   [8]byte // a read takes the expiry count
	ready func(fd uintptr) bool
}

// newAlarm returns an alarm, or one that falls back on sleepUntil if the
// kernel refuses a timerfd.
func newAlarm() *alarm {
	a := &alarm{fd: -1}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return a
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return a
	}
	a.f, a.rc, a.fd = f, rc, fd
	// The first read cannot be skipped although the timer has only just
	// been set: the poller forgets a readiness that came before the wait
	// began, so a short timer that fired in between would never wake it.
	a.ready = func(fd uintptr) bool {
		_, err := unix.Read(int(fd), a.buf[:])
		return err != unix.EAGAIN
	}
	return a
}

// wait returns at t, give or take the scheduler's wake-up.
func (a *alarm) wait(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if a.f == nil {
		sleepUntil(t)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(a.fd, 0, &spec, nil); err != nil {
		sleepUntil(t)
		return
	}
	if err := a.rc.Read(a.ready); err != nil {
		sleepUntil(t)
	}
}

// close releases the timerfd.
func (a *alarm) close() {
	if a.f != nil {
		_ = a.f.Close()
	}
}
