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

// Closed is the closed-loop load model (k6's looping VUs, ghz's -c): each
// of VUs virtual users starts its next iteration as soon as its previous
// one ended, so the offered load follows the server's latency.
type Closed struct {
	// VUs is the number of virtual users.
	VUs int
	// Duration bounds the measured phase; 0 means no time limit, in which
	// case Iterations must be set.
	Duration time.Duration
	// Iterations, when positive, is the total number of measured
	// iterations, shared out evenly between the VUs up front (so no VU
	// coordinates with another while running).
	Iterations int64
	// Warmup runs the VUs unmeasured for this long first.
	Warmup time.Duration
	// Seed seeds each VU's random source (with the VU's id), so a run's
	// choices are reproducible.
	Seed uint64
	// NoStallMeter leaves the machine-stall meter off: Run.Stalls stays nil.
	NoStallMeter bool
	// OnTick, if set, is called once a second with the last closed second.
	OnTick func(measure.Tick)
}

// Iteration runs one iteration for vu; it records what it measured with
// vu.Record. When ctx is cancelled the run is being interrupted and the
// iteration should return quickly without recording.
type Iteration func(ctx context.Context, vu *VU)

// VU is one virtual user: its identity, its random source and its
// Recorder. An Iteration owns its VU while it runs.
type VU struct {
	// ID numbers the VUs from 0.
	ID int
	// Rand is this VU's random source, seeded from Closed.Seed and ID.
	Rand *rand.Rand
	// N counts the iterations this VU has started (warm-up included); with
	// ID it makes request ids unique within a run.
	N int64

	rec      *measure.Recorder
	measured bool
	ended    <-chan struct{} // closed when the run ends; nil: never
}

// Wait waits d, or less if the run ends first (its duration passes or it
// is interrupted): a pause between an iteration's requests, such as a
// refusal's Retry-After, must not hold the run open past its end.
func (v *VU) Wait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-v.ended:
	}
}

// Record records one request that started at start and ended now. Samples
// taken during the warm-up are dropped.
func (v *VU) Record(start time.Time, o measure.Outcome) {
	if v.measured {
		v.rec.Record(start, time.Now(), o)
	}
}

// NoteOpFailures adds n individually rejected ops to the failure breakdown
// under key (see Recorder.NoteOpFailures).
func (v *VU) NoteOpFailures(key string, n int64, detail string) {
	if v.measured {
		v.rec.NoteOpFailures(key, n, detail)
	}
}

// Run is what a closed-loop run measured.
type Run struct {
	// Start is when the measured phase began (after any warm-up).
	Start time.Time
	// Elapsed is the measured phase, until the last VU stopped.
	Elapsed time.Duration
	// VUs is the number of virtual users.
	VUs int
	// Stats holds every VU's samples merged.
	Stats *measure.Recorder
	// Series is the per-second time series.
	Series []measure.Point
	// CPU is the CPU time this process used during the measured phase
	// (all goroutines, not just the VUs), or -1 where unknown.
	CPU time.Duration
	// MachineCPU is the machine's CPU time the hypervisor stole meanwhile
	// (nil where unknown).
	MachineCPU *measure.MachineCPU
	// Stalls is what the machine itself took from the measured phase;
	// nil if the phase never began (interrupted in the warm-up).
	Stalls *measure.MachineStalls
	// StallHists explain missed latency bounds when the run is judged.
	StallHists *measure.StallHistograms
	// Interrupted reports that ctx was cancelled before the run ended.
	Interrupted bool
}

// Prepare makes a VU's Iteration before the clock starts, so per-VU setup
// is not measured. ctx is the VU's own context, which lives as long as the
// run and is what the Iteration is called with: a context per VU keeps
// requests from registering with (and contending for) one shared parent.
type Prepare func(ctx context.Context, vu *VU) (Iteration, error)

// Run prepares one Iteration per VU, then runs them until the duration
// passes, the iterations are done, or ctx is cancelled.
func (c Closed) Run(ctx context.Context, prepare Prepare) (*Run, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	ctl := newRunControl(ctx, c.Warmup, c.Duration, !c.NoStallMeter)
	defer ctl.cancel()
	vus := make([]*VU, c.VUs)
	its := make([]Iteration, c.VUs)
	ctxs := make([]context.Context, c.VUs)
	for i := range vus {
		vus[i] = &VU{ID: i, Rand: rand.New(rand.NewPCG(c.Seed, uint64(i))), measured: c.Warmup <= 0, ended: ctl.ended}
		vctx, vcancel := context.WithCancel(ctl.ctx)
		defer vcancel()
		ctxs[i] = vctx
		it, err := prepare(vctx, vus[i])
		if err != nil {
			return nil, err
		}
		its[i] = it
	}

	origin := time.Now().Add(c.Warmup)
	col := measure.NewCollector(origin, c.VUs, c.OnTick)
	for _, vu := range vus {
		vu.rec = col.NewRecorder()
	}
	col.Start()

	ctl.start()
	var wg sync.WaitGroup
	for i, vu := range vus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctxs[i], vu, its[i], c.quota(i), origin, &ctl.stop)
		}()
	}
	wg.Wait()
	end := time.Now()
	run := &Run{Start: origin, Elapsed: max(end.Sub(origin), 0), VUs: c.VUs,
		Stats: measure.NewRecorder(origin), Interrupted: ctx.Err() != nil}
	ctl.finish(run)
	run.Series = col.Stop(end)
	for _, vu := range vus {
		run.Stats.Merge(vu.rec)
	}
	return run, nil
}

func (c Closed) validate() error {
	switch {
	case c.VUs <= 0:
		return errors.New("bench: VUs must be positive")
	case c.Duration < 0 || c.Warmup < 0 || c.Iterations < 0:
		return errors.New("bench: duration, warm-up and iterations must not be negative")
	case c.Duration == 0 && c.Iterations == 0:
		return errors.New("bench: a run needs a duration or a number of iterations")
	}
	return nil
}

// quota is how many measured iterations VU i runs; -1 means no limit.
func (c Closed) quota(i int) int64 {
	if c.Iterations <= 0 {
		return -1
	}
	q := c.Iterations / int64(c.VUs)
	if int64(i) < c.Iterations%int64(c.VUs) {
		q++
	}
	return q
}

// loop is one VU's life. The end of the run is signalled by stop, not by
// cancelling ctx, so that the iteration in flight finishes and counts (as
// with k6's graceful stop); ctx is cancelled only when the user interrupts.
func (c Closed) loop(ctx context.Context, vu *VU, it Iteration, quota int64, origin time.Time, stop *atomic.Bool) {
	defer vu.rec.Flush()
	for !stop.Load() && quota != 0 {
		if !vu.measured {
			vu.measured = !time.Now().Before(origin)
		}
		it(ctx, vu)
		vu.N++
		if vu.measured {
			vu.rec.CountIteration()
			quota--
		}
	}
}

// runControl ends a run: it raises stop when the measured phase is over or
// the caller's context is cancelled, samples CPU time around the measured
// phase (this process's and the whole machine's) and, unless told not to,
// watches the machine's stalls through it.
type runControl struct {
	ctx              context.Context
	cancel           context.CancelFunc
	warmup, duration time.Duration
	stop             atomic.Bool
	ended            chan struct{} // closed as stop is raised
	done             chan struct{}
	cpu0             time.Duration
	machine0         *measure.CPUTimes
	watchStalls      bool
	meter            *measure.StallMeter
}

func newRunControl(parent context.Context, warmup, duration time.Duration, watchStalls bool) *runControl {
	ctx, cancel := context.WithCancel(parent)
	return &runControl{ctx: ctx, cancel: cancel, ended: make(chan struct{}), done: make(chan struct{}), cpu0: -1, warmup: warmup, duration: duration, watchStalls: watchStalls}
}

// start starts the clock.
func (rc *runControl) start() {
	if rc.warmup <= 0 {
		rc.beginPhase()
	}
	go rc.watch()
}

func (rc *runControl) watch() {
	defer close(rc.done)
	defer close(rc.ended)
	defer rc.stop.Store(true)
	if rc.warmup > 0 {
		if !rc.wait(rc.warmup) {
			return
		}
		rc.beginPhase()
	}
	rc.wait(rc.duration)
}

// wait waits d (until cancelled if d is 0) and reports whether the run
// should go on: false once the context is cancelled.
func (rc *runControl) wait(d time.Duration) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-rc.ctx.Done():
		return false
	}
}

// beginPhase takes the CPU times the measured phase starts from and
// starts the stall meter, if wanted.
func (rc *runControl) beginPhase() {
	rc.cpu0, rc.machine0 = measure.ProcessCPU(), measure.ReadCPUTimes()
	if rc.watchStalls {
		rc.meter = measure.StartStallMeter()
	}
}

// finish stops the watcher once the VUs are done and records in run what
// the measured phase cost: the process's CPU time (-1 if unknown), the
// machine's stolen CPU time (nil if unknown) and the machine's stalls
// (nil if the phase never began or the meter was off).
func (rc *runControl) finish(run *Run) {
	cpu1, machine1 := measure.ProcessCPU(), measure.ReadCPUTimes()
	rc.cancel() // releases the watcher if it is still waiting
	<-rc.done   // and makes its writes of cpu0, machine0 and meter visible here
	run.CPU = -1
	if rc.cpu0 >= 0 && cpu1 >= 0 {
		run.CPU = cpu1 - rc.cpu0
	}
	run.MachineCPU = measure.MachineCPUBetween(rc.machine0, machine1)
	run.Stalls, run.StallHists = rc.meter.Stop()
}
