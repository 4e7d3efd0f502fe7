package kafkalog

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
)

// told records what a member's handlers were told it owns.
type told struct {
	mu      sync.Mutex
	owned   map[int32]bool
	changed chan struct{}
	// emptied counts the calls that left it owning nothing.
	emptied int
}

func newTold() *told { return &told{owned: map[int32]bool{}, changed: make(chan struct{}, 1)} }

func (o *told) handlers() Handlers {
	set := func(owned bool) func(context.Context, []int32) {
		return func(_ context.Context, ps []int32) {
			o.mu.Lock()
			for _, p := range ps {
				if owned {
					o.owned[p] = true
				} else {
					delete(o.owned, p)
				}
			}
			if len(o.owned) == 0 {
				o.emptied++
			}
			o.mu.Unlock()
			select {
			case o.changed <- struct{}{}:
			default:
			}
		}
	}
	return Handlers{Assigned: set(true), Revoked: set(false)}
}

func (o *told) emptiedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.emptied
}

func (o *told) now() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.owned))
}

// await waits until the handlers were told of n partitions owned, and
// returns them.
func (o *told) await(t *testing.T, ctx context.Context, n int) []int32 {
	t.Helper()
	for {
		if ps := o.now(); len(ps) == n {
			return ps
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			t.Fatalf("handlers told %v; want %d partitions owned", o.now(), n)
		}
	}
}

// franz-go's GroupTransactSession hands the member's revoke callback only
// the first revoke after the end of a transaction: until the next End, it
// drops later ones. A member that gives up partitions twice with no round
// between (it had no command to read) still gives up the second ones: its
// Owned and its Handlers follow every assignment the group gives it.
func TestEveryRevokeReachesTheMember(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	ta, tb, tc := newTold(), newTold(), newTold()
	a := join(t, ctx, c, "a", ta.handlers())
	ta.await(t, ctx, 2)

	b, err := Join(ctx, c, "b", tb.handlers())
	if err != nil {
		t.Fatal(err)
	}
	tb.await(t, ctx, 1) // a gave it up first (cooperative rebalancing)
	b.Close()
	ta.await(t, ctx, 2)

	join(t, ctx, c, "c", tc.handlers())
	moved := tc.await(t, ctx, 1)[0]
	if slices.Contains(a.Owned(), moved) || slices.Contains(ta.now(), moved) {
		t.Fatalf("c owns partition %d, and a still owns %v (told %v)", moved, a.Owned(), ta.now())
	}
}

// A member renews its session after a refused Begin: it leaves the group
// and joins it again. Leaving gives up every partition it owns, even when
// franz-go drops that revoke (one came since the last transaction ended):
// its handlers are told, so that the node drops their state before the
// new session's assignment.
func TestRenewGivesUpEveryPartition(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	ta, tb := newTold(), newTold()
	a := join(t, ctx, c, "a", ta.handlers())
	ta.await(t, ctx, 2)
	b, err := Join(ctx, c, "b", tb.handlers())
	if err != nil {
		t.Fatal(err)
	}
	tb.await(t, ctx, 1)
	b.Close()
	ta.await(t, ctx, 2)

	emptied := ta.emptiedCount()
	if err := a.renew(ctx); err != nil {
		t.Fatal(err)
	}
	ta.await(t, ctx, 2) // the new session owns both again
	if ta.emptiedCount() == emptied {
		t.Fatalf("a renewed its session and its handlers were never told it gave up its partitions")
	}
}

// A round never commits a write to the changelog of a partition the
// member does not own when its offsets commit, though the group
// coordinator, checking only the member's generation, would take them.
func TestRoundWritingAPartitionNotOwnedAborts(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	ta, tb := newTold(), newTold()
	a := join(t, ctx, c, "a", ta.handlers())
	ta.await(t, ctx, 2)
	join(t, ctx, c, "b", tb.handlers())
	theirs := tb.await(t, ctx, 1)[0]
	mine := 1 - theirs
	if owned := a.Owned(); !slices.Equal(owned, []int32{mine}) {
		t.Fatalf("a owns %v, want [%d]", owned, mine)
	}
	// The first round after the revoke aborts (franz-go's session knows
	// of it): the member runs rounds until one commits.
	for committed := false; !committed; {
		appendCommands(t, ctx, c, int(mine), 1)
		res, err := a.Round(ctx, 10, echo(c, "a", "a"))
		if err != nil {
			t.Fatal(err)
		}
		committed = res.Committed
	}
	appendCommands(t, ctx, c, int(mine)+2, 1)
	astray := func(_ context.Context, batch []Command) ([]Output, error) {
		return []Output{{Kind: Change, Partition: theirs, Key: []byte("astray"), Value: batch[0].Key}}, nil
	}
	var res RoundResult
	var err error
	for res.Commands == 0 && err == nil {
		res, err = a.Round(ctx, 10, astray)
	}
	if err != nil || res.Committed || !res.Aborted {
		t.Fatalf("round writing partition %d of b: %+v, %v; want aborted, no error", theirs, res, err)
	}
	if keys := countKeys(readAll(t, ctx, c, c.ChangelogTopic(), true)); keys["astray"] != 0 {
		t.Fatalf("committed changelog records: %v; want none astray", keys)
	}
}
