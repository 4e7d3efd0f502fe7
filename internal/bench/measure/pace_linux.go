package measure

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SleepUntil returns at t, give or take ten microseconds. An open-model
// connection at the kv targets' rates has far less than a millisecond
// between sends, and Go's timers (time.Sleep) round any wait shorter than
// a millisecond up to one when the process is otherwise idle, which would
// delay most sends by up to a millisecond and, since latency counts from
// the scheduled send, show up as latency the server never caused. (wrk2's
// own millisecond timers do just that.) So the last stretch of a wait is a
// nanosleep system call, with the thread's timer slack cut from its
// default to a microsecond: the goroutine may run on any thread, and the
// call is cheap.
func SleepUntil(t time.Time) {
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

// Ticker counts the periods of a timerfd, registered with Go's network
// poller: the kernel's high-resolution timer makes it readable on time,
// and the poller wakes the waiting goroutine without any thread or P
// sitting in a sleep meanwhile. A periodic timer is set once: each wait
// costs a read, not a read and a setting.
type Ticker struct {
	f     *os.File // the timerfd; nil if the kernel refused one
	rc    syscall.RawConn
	ticks int     // ticks elapsed so far, the first one included
	buf   [8]byte // a read takes the number of ticks since the last
	ready func(fd uintptr) bool
	// failed is set when a read of the timerfd failed.
	failed bool
	sleep  sleepTicker // ticks without a timerfd
}

// NewTicker returns a Ticker whose first tick is at start and the next
// every period after.
func NewTicker(start time.Time, period time.Duration) *Ticker {
	t := &Ticker{sleep: sleepTicker{start: start, period: period}}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return t
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	// The ticks are set on the monotonic clock's own time, so that a start
	// already past (the senders took a while to get going) still puts
	// them on the schedule's grid, the kernel counting those missed.
	var now unix.Timespec
	err = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	spec := unix.ItimerSpec{
		Value:    unix.NsecToTimespec(now.Nano() + time.Until(start).Nanoseconds()),
		Interval: unix.NsecToTimespec(period.Nanoseconds()),
	}
	rc, err2 := f.SyscallConn()
	if err = errors.Join(err, err2); err == nil {
		err = unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
	}
	if err != nil {
		_ = f.Close()
		return t
	}
	t.f, t.rc = f, rc
	// A read that finds no tick yet leaves the wait to the poller.
	t.ready = func(fd uintptr) bool {
		n, err := unix.Read(int(fd), t.buf[:])
		switch {
		case err == unix.EAGAIN:
			return false
		case err == nil && n == len(t.buf):
			t.ticks += int(binary.NativeEndian.Uint64(t.buf[:]))
		default:
			t.failed = true
		}
		return true
	}
	return t
}

// wait returns the index of the latest tick once there is one it has not
// returned yet: 0 for the tick at start, and more than one later if
// several passed since the last wait.
func (t *Ticker) Wait() int {
	if t.f != nil && !t.failed {
		if err := t.rc.Read(t.ready); err == nil && !t.failed {
			return t.ticks - 1
		}
		// The timerfd cannot be read (it is closed only once the clock
		// is done with it): sleep to the ticks from here on.
		t.failed = true
		t.sleep.next = t.ticks
	}
	return t.sleep.wait()
}

// close releases the timerfd.
func (t *Ticker) Close() {
	if t.f != nil {
		_ = t.f.Close()
	}
}
