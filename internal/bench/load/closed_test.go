package load

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestClosedSharesIterationsOut(t *testing.T) {
	perVU := make([]int, 3)
	run, err := Closed{VUs: 3, Iterations: 10}.Run(context.Background(), func(_ context.Context, vu *VU) (Iteration, error) {
		return func(_ context.Context, vu *VU) {
			perVU[vu.ID]++ // each VU writes only its own slot
			vu.Record(time.Now(), measure.Outcome{Ops: 2})
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if perVU[0] != 4 || perVU[1] != 3 || perVU[2] != 3 {
		t.Errorf("iterations per VU %v, want [4 3 3]", perVU)
	}
	s := run.Stats
	if s.Iterations() != 10 || s.Requests() != 10 || s.Ops() != 20 || run.Interrupted {
		t.Errorf("iterations %d requests %d ops %d interrupted %v; want 10, 10, 20, false",
			s.Iterations(), s.Requests(), s.Ops(), run.Interrupted)
	}
}

func TestClosedStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An hour-long run that VU 0 interrupts on its tenth iteration; the
	// others notice at their next iteration.
	run, err := Closed{VUs: 2, Duration: time.Hour}.Run(ctx, func(_ context.Context, vu *VU) (Iteration, error) {
		return func(ictx context.Context, vu *VU) {
			if vu.ID == 0 && vu.N == 9 {
				cancel()
			}
			if ictx.Err() == nil || vu.ID == 0 {
				vu.Record(time.Now(), measure.Outcome{})
			}
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interrupted {
		t.Error("run not marked interrupted")
	}
	if run.Stats.Requests() < 10 {
		t.Errorf("%d requests recorded, want VU 0's ten at least", run.Stats.Requests())
	}
}

// TestClosedWaitEndsWithTheRun: a VU waiting an hour within its
// iteration (a long Retry-After) does not hold a short run open: the wait
// ends as the run does, and the run measures its duration, not the wait.
func TestClosedWaitEndsWithTheRun(t *testing.T) {
	run, err := Closed{VUs: 2, Duration: 10 * time.Millisecond}.Run(context.Background(), func(_ context.Context, vu *VU) (Iteration, error) {
		return func(_ context.Context, vu *VU) {
			vu.Record(time.Now(), measure.Outcome{})
			vu.Wait(time.Hour)
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.Elapsed >= time.Hour || run.Stats.Requests() != 2 {
		t.Errorf("run of %v with %d requests; want it ended with its duration, one request per VU", run.Elapsed, run.Stats.Requests())
	}
}

func TestClosedPrepareErrorStopsRun(t *testing.T) {
	boom := errors.New("boom")
	_, err := Closed{VUs: 2, Iterations: 2}.Run(context.Background(), func(_ context.Context, vu *VU) (Iteration, error) {
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
}

func TestClosedValidates(t *testing.T) {
	for _, c := range []Closed{{VUs: 0, Iterations: 1}, {VUs: 1}, {VUs: 1, Duration: -time.Second}} {
		if _, err := c.Run(context.Background(), nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestVURandIsSeeded(t *testing.T) {
	draw := func() [2]uint64 {
		var got [2]uint64
		_, err := Closed{VUs: 2, Iterations: 2, Seed: 99}.Run(context.Background(), func(_ context.Context, vu *VU) (Iteration, error) {
			return func(_ context.Context, vu *VU) { got[vu.ID] = vu.Rand.Uint64() }, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := draw(), draw()
	if a != b || a[0] == a[1] {
		t.Errorf("draws %v and %v: want equal runs and different VUs", a, b)
	}
}
