package kafkalog

import (
	"context"
	"fmt"
	"strconv"
	"testing"
)

// roundsUntil runs nd's rounds under ctx until stop ends, then sends
// their first error, or nil. stop ends only a round's wait for commands:
// a write it cut would be of unknown outcome, which a test counting the
// commands of counted rounds could not count.
func roundsUntil(stop, ctx context.Context, nd *chainNode, errs chan<- error) {
	for stop.Err() == nil {
		if _, err := nd.round(stop, ctx); err != nil {
			errs <- err
			return
		}
	}
	errs <- nil
}

// appending appends commands cmd-from … cmd-(from+n-1) as appendCommands
// does, in the background, then sends its error or nil.
func appending(ctx context.Context, c Config, from, n int, errs chan<- error) {
	p, err := NewProducer(c)
	if err != nil {
		errs <- err
		return
	}
	defer p.Close()
	for i := from; i < from+n && err == nil; i++ {
		key := []byte("cmd-" + strconv.Itoa(i))
		_, err = p.Append(ctx, int32(i)%c.Partitions, key, key)
	}
	errs <- err
}

// On a real broker, partitions move between two members while they run
// rounds and commands come: b joins once a applied the first third, and
// leaves, while the last third is appended, once it applied some of the
// second. Every command is applied exactly once in rounds that counted,
// and a third owner, restoring each partition from the log's start, finds
// each command's change exactly once among the changes that count, and
// reads on from the end of the commands.
func TestChainMembersApplyEachCommandOnceAcrossMoves(t *testing.T) {
	const n = 300
	ctx, c := newCluster(t, 4)
	appendCommands(t, ctx, c, 0, n/3)
	a := joinChain(t, c, "a")
	errs, appended := make(chan error, 2), make(chan error, 1)
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	go roundsUntil(actx, ctx, a, errs)
	a.await(t, ctx, func() bool { return len(a.applied) == n/3 }, fmt.Sprintf("applied %d", n/3))

	b := joinChain(t, c, "b")
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	go roundsUntil(bctx, ctx, b, errs)
	b.await(t, ctx, func() bool { return len(b.m.Owned()) == 2 }, "owns 2")
	appendCommands(t, ctx, c, n/3, n/3)
	b.await(t, ctx, func() bool { return len(b.applied) >= n/12 }, fmt.Sprintf("applied %d", n/12))
	go appending(ctx, c, 2*n/3, n/3, appended)
	stopB()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	b.m.Close()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}

	a.await(t, ctx, func() bool { return len(a.applied)+len(b.appliedKeys()) >= n }, fmt.Sprintf("applied %d in all", n))
	stopA()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	exactlyOnceApplied(t, n, a, b)

	third := newShard()
	o := newOwner(t, c, third)
	for p := range c.Partitions {
		changes := map[string]int{}
		tk, err := o.Take(ctx, p, LogStart(), Claim{Generation: 99, Member: "third"}, func(k, v []byte) error {
			changes[string(k)]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := p; i < n; i += c.Partitions {
			if key := "k/cmd-" + strconv.Itoa(int(i)); changes[key] != 1 {
				t.Errorf("partition %d: %s's change counts %d times", p, key, changes[key])
			}
		}
		if at, _ := o.Commands(p); at != int64(n/int(c.Partitions)) || len(tk.Restored.Foreign) != 0 {
			t.Errorf("partition %d: the third owner reads on from %d, foreign %q; want %d, none", p, at, tk.Restored.Foreign, n/int(c.Partitions))
		}
	}
}
