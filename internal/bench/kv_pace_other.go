//go:build !linux

package bench

import "time"

// sleepUntil returns at t, as precisely as Go's timers allow here (see the
// Linux version for why precision matters).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// alarm waits for a time; here, with Go's timers.
type alarm struct{}

func newAlarm() *alarm { return &alarm{} }

// wait returns at t.
func (*alarm) wait(t time.Time) { sleepUntil(t) }

func (*alarm) close() {}
