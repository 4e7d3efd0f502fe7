package node

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// A node whose local copy breaks while it records a take (Taken: the
// restore's Done fails) leaves the group too. Its owner's build waits for
// the take meanwhile; once the take ends, the build finds the partition
// broken, which lasts until the node restarts (brokenBy), so the build
// gives up rather than retry, and the node leaves: another node takes
// every partition. The copy's disk fails its table-file writes from the
// moment the take is held (copyFault), so that the take itself, and every
// write of the copy before it, lands in its store; a round's changes
// committed after it are flushed at once, the flush's write fails, and
// the copy's store refuses every write from then on.
func TestNodeWhoseCopyBreaksDuringATakeLeavesTheGroup(t *testing.T) {
	_, k := fakeKafka(t)
	target := atomic.Int32{}
	target.Store(-1)
	var holding atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	fault := &copyFault{}
	testHookTaken = func(p int32) {
		if p == target.Load() && holding.CompareAndSwap(false, true) {
			fault.on.Store(true)
			close(held)
			<-release
		}
	}
	t.Cleanup(func() { testHookTaken = nil })
	logged := &seenLog{}
	a := startNode(t, k, t.TempDir(), fault.under, func(c *Config) { c.Logger = slog.New(logged) })
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	// Cleanups run last first: a failing test frees the take before a
	// closes, which would wait for it.
	t.Cleanup(free)
	settled(t, a)
	b := joinNode(t, k, a)
	mine, taken := a.Owned(), b.Owned()[0]
	target.Store(taken)
	b.Close()
	until(t, func() bool { return closed(held) }, func() string {
		return fmt.Sprintf("a has not taken %d: it owns %v %q", taken, a.Owned(), logged.lines)
	})
	// A round on a's own partition that deletes keys it never had, as its
	// settle records it: its changes, as large as the copy's memtable,
	// pass the size at which the copy commits its pending rounds, and
	// Pebble applies the commit as a flushable batch, which it flushes at
	// once. The flush fails in the background; a load from the copy, which
	// writes to it, then finds its store fenced.
	var gone []kafkalog.Output
	for i := range 8 {
		key := fmt.Appendf(bytes.Repeat([]byte{'-'}, copyMemTable/8), "%d", i)
		gone = append(gone, kafkalog.Output{Kind: kafkalog.Change, Partition: mine[0], Key: key})
	}
	a.commitCopies(gone, mine[:1])
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
