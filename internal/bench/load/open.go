package load

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// Open is the open load model of wrk2: requests are due at a constant
// total Rate, spread evenly over the senders, whatever the server's
// latency. A sender whose previous request is still out sends its next
// one as soon as it can, and every latency is measured from the moment the
// request was due, not from when it was sent: a server that stalls is
// charged for every request the stall delayed (coordinated omission
// corrected), which a closed loop, waiting politely, would never send.
type Open struct {
	// Senders is the number of schedules, each with at most one request
	// in flight: a connection each, as wrk2's, or several pipelining on
	// one connection (HTTPOptions.Pipeline).
	Senders int
	// Rate is the total number of requests due per second.
	Rate float64
	// Duration is the measured phase: requests due within it are sent.
	Duration time.Duration
	// Warmup runs the schedule unmeasured first.
	Warmup time.Duration
	// Seed seeds each sender's random source (with its index).
	Seed uint64
	// NoStallMeter leaves the machine-stall meter off: Run.Stalls stays nil.
	NoStallMeter bool
	// OnTick, if set, is called once a second with the last closed second.
	OnTick func(measure.Tick)
}

// Request sends one request for vu and returns its outcome. When ctx is
// cancelled the run is being interrupted; the outcome is then dropped.
type Request func(ctx context.Context, vu *VU) measure.Outcome

// OpenRun is what an open-model run measured.
type OpenRun struct {
	*Run
	// Unsent counts requests due in the measured phase that were never
	// sent, because their sender was still waiting for earlier replies
	// when the phase ended.
	Unsent int64
}

// Run prepares a Request per sender, then runs the schedule.
func (o Open) Run(ctx context.Context, prepare func(ctx context.Context, vu *VU) (Request, error)) (*OpenRun, error) {
	if o.Senders <= 0 || o.Rate <= 0 || o.Duration <= 0 || o.Warmup < 0 {
		return nil, errors.New("bench: an open-model run needs senders, a rate and a duration")
	}
	ctl := newRunControl(ctx, o.Warmup, o.Duration, !o.NoStallMeter)
	defer ctl.cancel()
	vus := make([]*VU, o.Senders)
	sends := make([]Request, o.Senders)
	for i := range vus {
		vus[i] = &VU{ID: i, Rand: rand.New(rand.NewPCG(o.Seed, uint64(i)))}
		send, err := prepare(ctl.ctx, vus[i])
		if err != nil {
			return nil, err
		}
		sends[i] = send
	}
	first := time.Now()
	origin := first.Add(o.Warmup)
	end := origin.Add(o.Duration)
	col := measure.NewCollector(origin, o.Senders, o.OnTick)
	for _, vu := range vus {
		vu.rec = col.NewRecorder()
	}
	col.Start()
	ctl.start()
	clk := newClock(newSchedule(first, o.Rate, o.Senders))
	var wg sync.WaitGroup
	wg.Go(func() { clk.run(end, &ctl.stop) })
	var unsent atomic.Int64
	for i, vu := range vus {
		wg.Go(func() {
			defer vu.rec.Flush()
			unsent.Add(o.loop(ctl.ctx, vu, sends[i], clk, origin, end, &ctl.stop))
		})
	}
	wg.Wait()
	stopped := time.Now()
	run := &Run{Start: origin, Elapsed: max(stopped.Sub(origin), 0), VUs: o.Senders,
		Stats: measure.NewRecorder(origin), Interrupted: ctx.Err() != nil}
	ctl.finish(run)
	run.Series = col.Stop(stopped)
	for _, vu := range vus {
		run.Stats.Merge(vu.rec)
	}
	return &OpenRun{Run: run, Unsent: unsent.Load()}, nil
}

// loop is one sender's schedule: its requests are the clock's every
// Senders-th, starting with its index. It returns how many requests of the
// measured phase it never sent.
func (o Open) loop(ctx context.Context, vu *VU, send Request, clk *clock, origin, end time.Time, stop *atomic.Bool) (unsent int64) {
	every := time.Duration(o.Senders) * clk.sched.interval
	for j := vu.ID; ; j += o.Senders {
		due := clk.sched.due(j)
		if !due.Before(end) {
			return 0
		}
		if stop.Load() {
			// The phase ended (or the user interrupted) while this
			// sender was behind its schedule.
			return int64((end.Sub(due) + every - 1) / every)
		}
		clk.await(vu.ID, j)
		vu.measured = !due.Before(origin)
		out := send(ctx, vu)
		if ctx.Err() != nil {
			return 0
		}
		vu.Record(due, out)
		vu.N++
	}
}
