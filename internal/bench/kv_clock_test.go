package bench

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
	const senders, rate = 4, 4000
	s := schedule{first: time.Now(), rate: rate, senders: senders}
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
				clk.await(i, s.due(j))
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
			t.Errorf("sender %d: %d of %d waits ended early, want 0 of 50", i, early[i], waits[i])
		}
	}
}

// TestClockStopReleasesWaitingSenders stops a clock whose schedule runs
// for an hour: it must close its wake-ups, and a sender waiting on one
// then waits for its due time by itself.
func TestClockStopReleasesWaitingSenders(t *testing.T) {
	s := schedule{first: time.Now(), rate: 1, senders: 2}
	clk := newClock(s)
	var stop atomic.Bool
	stop.Store(true)
	done := make(chan struct{})
	go func() {
		clk.run(s.first.Add(time.Hour), &stop)
		close(done)
	}()
	<-done
	due := time.Now().Add(time.Millisecond)
	clk.await(1, due)
	if time.Now().Before(due) {
		t.Error("a sender released by a stopped clock returned before its due time")
	}
}
