package measure

import "time"

// sleepTicker ticks by sleeping to each tick: where there is no timerfd.
type sleepTicker struct {
	start  time.Time
	period time.Duration
	next   int // the next tick to wait for
}

// wait returns the index of the latest tick once there is one it has not
// returned yet, as Ticker.Wait does.
func (s *sleepTicker) wait() int {
	SleepUntil(s.start.Add(time.Duration(s.next) * s.period))
	latest := max(s.next, int(time.Since(s.start)/s.period))
	s.next = latest + 1
	return latest
}
