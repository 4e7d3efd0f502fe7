package load

import (
	"context"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestRunsCarryTheirStalls(t *testing.T) {
	noop := func(context.Context, *VU) (Iteration, error) { return func(context.Context, *VU) {}, nil }
	run, err := Closed{VUs: 2, Iterations: 10}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls == nil || run.Stalls.Samples < 1 || run.StallHists == nil {
		t.Errorf("closed run stalls %+v, want the meter's report", run.Stalls)
	}
	open := Open{Senders: 1, Rate: 1000, Duration: 20 * time.Millisecond}
	orun, err := open.Run(context.Background(), func(context.Context, *VU) (Request, error) {
		return func(context.Context, *VU) measure.Outcome { return measure.Outcome{} }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if orun.Stalls == nil || orun.Stalls.Samples < 1 || orun.StallHists == nil {
		t.Errorf("open run stalls %+v, want the meter's report", orun.Stalls)
	}
	// With the meter off, neither model reports stalls.
	run, err = Closed{VUs: 2, Iterations: 10, NoStallMeter: true}.Run(context.Background(), noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls != nil || run.StallHists != nil {
		t.Errorf("closed run with the meter off reported stalls %+v", run.Stalls)
	}
	open.NoStallMeter = true
	if orun, err = open.Run(context.Background(), func(context.Context, *VU) (Request, error) {
		return func(context.Context, *VU) measure.Outcome { return measure.Outcome{} }, nil
	}); err != nil {
		t.Fatal(err)
	}
	if orun.Stalls != nil || orun.StallHists != nil {
		t.Errorf("open run with the meter off reported stalls %+v", orun.Stalls)
	}
	// Interrupted in the warm-up, the measured phase never began.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, err = Closed{VUs: 1, Duration: time.Hour, Warmup: time.Hour}.Run(ctx, noop)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls != nil {
		t.Errorf("a run interrupted in its warm-up reported stalls %+v", run.Stalls)
	}
}
