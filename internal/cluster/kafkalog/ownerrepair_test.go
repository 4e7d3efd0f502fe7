package kafkalog

import (
	"errors"
	"sync"
	"testing"
)

// These tests run Owners over kfake: repairs that cannot be written.

// failingShard is a shard whose restate fails for the partitions set in
// failing.
type failingShard struct {
	*shard
	mu      sync.Mutex
	failing map[int32]bool
}

var errRestate = errors.New("restate refused")

func (s *failingShard) restate(p int32, key []byte) ([]Update, error) {
	s.mu.Lock()
	fail := s.failing[p]
	s.mu.Unlock()
	if fail {
		return nil, errRestate
	}
	return s.shard.restate(p, key)
}

// A take whose first write cannot be written (its repair not read) leaves
// the partition unclaimed: the owner's later takes and rounds of other
// partitions, which would carry its repairs, are written and count.
func TestOwnerTakeThatFailsLeavesNoRepairBehind(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	sz, sa := newShard(), newShard()
	z, a := newOwner(t, c, sz), newOwner(t, c, sa)
	take(t, ctx, z, sz, 0, LogStart(), "z")
	take(t, ctx, a, sa, 0, LogStart(), "a")
	if o := round(t, ctx, z, sz, Batch{Partition: 0, Updates: []Update{upd("k1", "zombie")}, Commands: 1}); o.Result != Fenced {
		t.Fatalf("the zombie's write after a's claim: %+v", o)
	}
	sb := &failingShard{shard: newShard(), failing: map[int32]bool{0: true}}
	b := NewOwner(newWriter(t, c), c, sb.restate)
	if _, err := b.Take(ctx, 0, LogStart(), Claim{Generation: 1, Member: "b"}, func(k, v []byte) error {
		sb.set(0, k, v)
		return nil
	}); !errors.Is(err, errRestate) {
		t.Fatalf("b's take of 0 with its repair refused: %v", err)
	}
	if _, ok := b.State(0); ok {
		t.Fatal("b owns 0 after its take failed")
	}
	take(t, ctx, b, sb.shard, 1, LogStart(), "b")
	if o := round(t, ctx, b, sb.shard, Batch{Partition: 1, Updates: []Update{upd("k", "b")}, Commands: 1}); o.Result != Counted {
		t.Fatalf("b's round of 1: %+v", o)
	}
}

// A repair the owner adds to a round for a partition with no batch there,
// and that cannot be written, gives that partition up alone: the round's
// other batches are written and count.
func TestOwnerRepairThatFailsFailsItsPartitionAlone(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	sz, sy, sa := newShard(), newShard(), newShard()
	z, y := newOwner(t, c, sz), newOwner(t, c, sy)
	fa := &failingShard{shard: sa, failing: map[int32]bool{}}
	a := NewOwner(newWriter(t, c), c, fa.restate)
	take(t, ctx, z, sz, 0, LogStart(), "z")
	take(t, ctx, y, sy, 0, LogStart(), "y")
	take(t, ctx, a, sa, 0, LogStart(), "a")
	take(t, ctx, a, sa, 1, LogStart(), "a")
	round(t, ctx, z, sz, Batch{Partition: 0, Updates: []Update{upd("k1", "zombie")}, Commands: 1})
	out, err := a.Check(ctx)
	if err != nil || len(out) != 2 || out[1].Result != Counted {
		t.Fatalf("a's check after the zombie's write: %+v, %v", out, err)
	}
	round(t, ctx, y, sy, Batch{Partition: 0, Updates: []Update{upd("k2", "zombie")}, Commands: 2})
	fa.mu.Lock()
	fa.failing[0] = true
	fa.mu.Unlock()
	if out, err := a.Check(ctx); err != nil || len(out) != 2 || out[1].Partition != 0 || out[1].Result != Unknown || !errors.Is(out[1].Written.Err, errRestate) {
		t.Fatalf("a's check with the repair of 0 refused: %+v, %v", out, err)
	}
	if _, ok := a.State(0); ok {
		t.Fatal("a owns 0 after its repair failed")
	}
	if o := round(t, ctx, a, sa, Batch{Partition: 1, Updates: []Update{upd("k", "a")}, Commands: 1}); o.Result != Counted {
		t.Fatalf("a's round of 1: %+v", o)
	}
}
