package load

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClockWakesEverySenderAtItsDueTimes runs a clock for several senders
// and checks that each sender's every wait ends at or after its due time,
// never before, and that the clock's wake-ups cover the whole schedule.
func TestClockWakesEverySenderAtItsDueTimes(t *testing.T) {
	// At 200,000/s the clock wakes every fourth request's due time and
	// sends the requests due since.
	for _, rate := range []float64{4000, 200000} {
		const senders = 4
		s := newSchedule(time.Now(), rate, senders)
		end := s.due(200) // 50 requests per sender
		clk := newClock(s)
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() { clk.run(end, &stop) })
		early := make([]int, senders)
		waits := make([]int, senders)
		for i := range senders {
			wg.Go(func() {
				for j := i; s.due(j).Before(end); j += senders {
					clk.await(i, j)
					if time.Now().Before(s.due(j)) {
						early[i]++
					}
					waits[i]++
				}
			})
		}
		wg.Wait()
		for i := range senders {
			if early[i] != 0 || waits[i] != 50 {
				t.Errorf("rate %v, sender %d: %d of %d waits ended early, want 0 of 50", rate, i, early[i], waits[i])
			}
		}
	}
}

// TestClockStopReleasesWaitingSenders stops a clock whose schedule runs
// for an hour: it must close its wake-ups, and a sender waiting on one
// then waits for its due time by itself.
func TestClockStopReleasesWaitingSenders(t *testing.T) {
	s := newSchedule(time.Now(), 1000, 2)
	clk := newClock(s)
	var stop atomic.Bool
	stop.Store(true)
	done := make(chan struct{})
	go func() {
		clk.run(s.first.Add(time.Hour), &stop)
		close(done)
	}()
	<-done
	clk.await(1, 3)
	if time.Now().Before(s.due(3)) {
		t.Error("a sender released by a stopped clock returned before its due time")
	}
}
