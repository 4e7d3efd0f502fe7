//go:build !linux

package measure

import "time"

// SleepUntil returns at t, as precisely as Go's timers allow here (see the
// Linux version for why precision matters).
func SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// Ticker ticks by sleeping to each tick here.
type Ticker struct{ sleepTicker }

// NewTicker returns a Ticker whose first tick is at start and the next
// every period after.
func NewTicker(start time.Time, period time.Duration) *Ticker {
	return &Ticker{sleepTicker{start: start, period: period}}
}

// Wait returns the index of the latest tick once there is one it has not
// returned yet.
func (t *Ticker) Wait() int { return t.sleepTicker.wait() }

// Close releases nothing here.
func (*Ticker) Close() {}
