package node

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/surge-dev/surge/internal/ledger"
)

// copyFault fails the writes of the local snapshot's table files while
// on, as a failing disk does: the copy keeps no WAL, so its flushes are
// what writes it.
type copyFault struct{ on atomic.Bool }

func (f *copyFault) String() string { return "copyFault" }

func (f *copyFault) MaybeError(op errorfs.Op) error {
	if f.on.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".sst") {
		return syscall.EIO
	}
	return nil
}

// copyMemTable is the memtable of a local copy whose disk a test fails:
// small, so that a few rounds, or one round of copyMemTable bytes, reach
// its table files.
const copyMemTable = 64 << 10

// under puts a node's local copy on f's failing disk, with a memtable of
// copyMemTable bytes.
func (f *copyFault) under(c *Config) {
	c.SnapshotFS, c.SnapshotMemTable = errorfs.Wrap(vfs.Default, f), copyMemTable
}

// A node whose local copy cannot take the writes that counted leaves the
// group rather than hold partitions it cannot load: the other node takes
// them, restored from the changelog with every write that counted, and
// the node stays unready, serving as a front node only. The copy's
// memtable is small, so that its pending rounds are committed, and
// flushed, every few transfers: a flush's failed write fences the copy's
// store, and the next commit of its pending rounds (at its size, or a
// rebuild's: changelog.Snapshots.Load) finds the copy lost counted
// rounds.
func TestNodeWithABrokenCopyLeavesTheGroup(t *testing.T) {
	_, k := fakeKafka(t)
	fault := &copyFault{}
	a := startNode(t, k, t.TempDir(), fault.under)
	settled(t, a)
	ids := accounts(t, a, 12)
	b := joinNode(t, k, a)
	src, dst := onPartitionsOf(t, a, ids)

	fault.on.Store(true)
	applied := 0
	until(t, func() bool {
		if len(a.Owned()) == 0 && len(b.Owned()) == fakePartitions {
			return true
		}
		req := ledger.TransferRequest{ID: fmt.Sprint("t", applied), From: src, To: dst, Amount: 1}
		if _, _, err := a.Ledger().Transfer(context.Background(), req); err == nil {
			applied++
		}
		a.moved() // a rebuild, which commits the copy's pending rounds
		return false
	}, func() string {
		return fmt.Sprintf("node a, its copy failing, owns %v (ready %v); b owns %v", a.Owned(), a.Ready(), b.Owned())
	})
	settled(t, b)
	if a.Ready() {
		t.Fatal("node a, out of the group with a broken copy, is ready")
	}
	transfer(t, a, "through a", src, dst, 1)
	if got, want := balances(t, a, []string{src, dst}), fmt.Sprintf("%s=%d %s=%d ", src, 999-applied, dst, 1001+applied); got != want {
		t.Fatalf("after %d transfers and one through a out of the group: %s, want %s", applied, got, want)
	}
}
