package measure

import "testing"

func TestStallMeterLifecycle(t *testing.T) {
	m := StartStallMeter()
	s, h := m.Stop()
	if s == nil || h == nil || s.Elapsed <= 0 || s.Samples < 1 || s.PeriodMs != 1 || h.Overruns.TotalCount() != s.Samples {
		t.Fatalf("report %+v: want a positive phase and at least one sample", s)
	}
	select {
	case <-m.done:
	default:
		t.Error("stop returned before the meter's goroutine ended")
	}
	var never *StallMeter
	if s, h := never.Stop(); s != nil || h != nil {
		t.Error("a meter never started reported stalls")
	}
}
