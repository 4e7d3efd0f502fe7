package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
)

// A node whose local copy breaks while it records a take (Taken: the
// restore's Done fails) leaves the group too. Its owner's build waits for
// the take meanwhile; once the take ends, the build finds the partition
// broken, which lasts until the node restarts (brokenBy), so the build
// gives up rather than retry, and the node leaves: another node takes
// every partition. The copy's disk fails its WAL writes while the take is
// held; the node's rounds on its own partitions go on, and loading one of
// them from the copy commits them, until the copy refuses writes, which
// its store does from the first write its disk failed.
func TestNodeWhoseCopyBreaksDuringATakeLeavesTheGroup(t *testing.T) {
	_, k := fakeKafka(t)
	target := atomic.Int32{}
	target.Store(-1)
	var holding atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	testHookTaken = func(p int32) {
		if p == target.Load() && holding.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
	}
	t.Cleanup(func() { testHookTaken = nil })
	logged := &seenLog{}
	fault := &copyFault{}
	a := startNode(t, k, t.TempDir(), func(c *Config) {
		c.SnapshotFS = errorfs.Wrap(vfs.Default, fault)
		c.Logger = slog.New(logged)
	})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	// Cleanups run last first: a failing test frees the take before a
	// closes, which would wait for it.
	t.Cleanup(free)
	settled(t, a)
	b := joinNode(t, k, a)
	mine, taken := a.Owned(), b.Owned()[0]
	// a's rounds on its own partition wait in the copy's pending batch,
	// which the take's restore commits (changelog.Snapshots.RestoreChain)
	// once the disk fails: the WAL write it makes fails, and the copy's
	// store refuses every write after it.
	key := keyOn(mine[0])
	for i := range 16 {
		w, err := a.KV().PutNoWait(context.Background(), key, make([]byte, 8<<10))
		if err == nil {
			err = w.Wait()
		}
		if err != nil {
			t.Fatalf("put %d on a's partition %d: %v", i, mine[0], err)
		}
	}
	fault.on.Store(true)
	target.Store(taken)
	b.Close()
	until(t, func() bool { return closed(held) }, func() string {
		return fmt.Sprintf("a has not taken %d: it owns %v %q", taken, a.Owned(), logged.lines)
	})
	scratch, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = scratch.Close() })
	until(t, func() bool { return a.snaps.Load(scratch, mine[:1]) != nil },
		func() string { return "a's copy takes writes with its disk failing" })

	a.moved() // a build, which waits for the take
	under := fmt.Sprintf("partition %d's take is under way", taken)
	until(t, func() bool { return logged.saw(under) }, func() string { return "a's build did not wait for the take" })
	free()
	until(t, func() bool { return len(a.Owned()) == 0 && !a.Ready() }, func() string {
		return fmt.Sprintf("node a, its copy broken during the take of %d, owns %v (ready %v)", taken, a.Owned(), a.Ready())
	})
	if !logged.saw(fmt.Sprintf("recording a take in the local copy partition=%d", taken)) {
		t.Fatalf("a left the group, but recorded the take of %d", taken)
	}
	c := startNode(t, k, t.TempDir())
	until(t, func() bool { return len(c.Owned()) == fakePartitions }, func() string {
		return fmt.Sprintf("node c owns %v; a, out of the group, owns %v", c.Owned(), a.Owned())
	})
	settled(t, c)
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// keyOn returns a key of partition p.
func keyOn(p int32) string {
	for i := 0; ; i++ {
		if key := fmt.Sprint("k", i); int32(engine.ShardIndex(key, fakePartitions)) == p {
			return key
		}
	}
}
