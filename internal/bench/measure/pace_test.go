package measure

import (
	"testing"
	"time"
)

// TestSleepTickerReturnsEachTickOnceAndNeverEarly drives the ticker used
// where there is no timerfd: every index it returns is a tick that has
// passed, and each is returned at most once, in order.
func TestSleepTickerReturnsEachTickOnceAndNeverEarly(t *testing.T) {
	st := sleepTicker{start: time.Now(), period: 100 * time.Microsecond}
	last := -1
	for range 50 {
		tick := st.wait()
		if tick <= last {
			t.Fatalf("tick %d after tick %d", tick, last)
		}
		if at := st.start.Add(time.Duration(tick) * st.period); time.Now().Before(at) {
			t.Fatalf("tick %d returned before its time", tick)
		}
		last = tick
	}
}
