//go:build !linux

package bench

import "time"

// sleepUntil returns at t, as precisely as Go's timers allow here (see the
// Linux version for why precision matters).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// ticker ticks by sleeping to each tick here.
type ticker struct{ sleepTicker }

func newTicker(start time.Time, period time.Duration) *ticker {
	return &ticker{sleepTicker{start: start, period: period}}
}

func (*ticker) close() {}
