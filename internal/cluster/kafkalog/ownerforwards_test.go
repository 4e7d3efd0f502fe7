package kafkalog

import (
	"context"
	"slices"
	"testing"
)

// compactingOwners are two owners over a changelog of one partition the
// cleaner compacts as soon as it can, the first having taken it.
func compactingOwners(t *testing.T) (context.Context, Config, *shard, *shard, *Owner, *Owner) {
	t.Helper()
	ctx, c := newCluster(t, 1)
	compactSoon(t, ctx, c)
	sa, sb := newShard(), newShard()
	a, b := newOwner(t, c, sa), newOwner(t, c, sb)
	take(t, ctx, a, sa, 0, LogStart(), "a")
	return ctx, c, sa, sb, a, b
}

// An owner's forward records go through the log cleaner as the book says:
// a forward acknowledged is deleted, and its tombstone, not its record,
// is what compaction keeps; a zombie's record of the forward the owner
// owes under the same sequence is written over by the owner's repair, and
// compaction keeps the repair. A restore from the compacted log owes
// exactly the forwards not acknowledged, with the owner's values.
func TestOwnerForwardRecordsSurviveCompaction(t *testing.T) {
	ctx, c, sa, sb, a, b := compactingOwners(t)
	var book Book
	book.Owe(1, []byte("f"), []byte("c1"))
	book.Owe(1, []byte("f"), []byte("c2"))
	first := round(t, ctx, a, sa, Batch{Partition: 0, Commands: 1, Book: &book})
	if first.Written.End-first.Written.Base != 3 {
		t.Fatalf("a's round of two forwards: %+v", first)
	}
	acked := first.Written.Base // a's record of forward 1

	take(t, ctx, b, sb, 0, LogStart(), "b")
	bb, _ := b.Book(0)
	if err := bb.Acknowledge(1, 1); err != nil {
		t.Fatal(err)
	}
	bb.Owe(1, []byte("f"), []byte("b3"))
	if o := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 2, Book: &bb}); o.Written.End-o.Written.Base != 3 {
		t.Fatalf("b's round, a tombstone and a forward: %+v", o)
	}
	zb := book.Clone()
	zb.Owe(1, []byte("f"), []byte("zombie"))
	zombie := round(t, ctx, a, sa, Batch{Partition: 0, Commands: 9, Book: &zb})
	if zombie.Result != Fenced {
		t.Fatalf("the zombie's write: %+v", zombie)
	}
	found := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 2})
	if want := []string{string(forwardKey(1, 3))}; !slices.Equal(keyStrings(found.Written.ForeignKeys), want) {
		t.Fatalf("b's write after the zombie's found %q", keyStrings(found.Written.ForeignKeys))
	}
	if repair := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 2}); repair.Written.End-repair.Written.Base != 2 {
		t.Fatalf("b's repair: %+v", repair)
	}

	gone := []int64{acked, zombie.Written.Base}
	pollUntil(t, ctx, func() bool {
		round(t, ctx, b, sb, Batch{Partition: 0, Commands: 2}) // rolls a segment
		entries, _, _ := readChangelog(t, ctx, c, 0)
		return !slices.ContainsFunc(entries, func(e Entry) bool { return slices.Contains(gone, e.Offset) })
	}, "compaction of the acknowledged forward's record and the zombie's")
	entries, _, _ := readChangelog(t, ctx, c, 0)
	if !slices.ContainsFunc(entries, func(e Entry) bool { return string(e.Key) == string(forwardKey(1, 1)) && e.Value == nil }) {
		t.Fatal("compaction dropped the acknowledged forward's tombstone")
	}

	sc := newShard()
	oc := newOwner(t, c, sc)
	take(t, ctx, oc, sc, 0, LogStart(), "c")
	restored, _ := oc.Book(0)
	want := []Owed{{Partition: 1, Seq: 2, Key: []byte("f"), Value: []byte("c2")}, {Partition: 1, Seq: 3, Key: []byte("f"), Value: []byte("b3")}}
	if got := restored.Owed(); !slices.EqualFunc(got, want, sameOwed) || restored.Acknowledged(1) != 1 || restored.assigned[1] != 3 {
		t.Fatalf("restored from the compacted log owing %v, acknowledged %d, assigned %d", got, restored.Acknowledged(1), restored.assigned[1])
	}
}
