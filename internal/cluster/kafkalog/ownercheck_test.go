package kafkalog

import (
	"slices"
	"testing"
)

// An owner that writes no round notices a zombie's writes by its check:
// it repairs the keys they changed, with no round of its own; a check
// that finds nothing new writes nothing; and one after another owner's
// claim finds the partition fenced.
func TestOwnerCheckRepairsAZombiesWrites(t *testing.T) {
	ctx, c := newCluster(t, 1)
	sz, sa, sb := newShard(), newShard(), newShard()
	z, a, b := newOwner(t, c, sz), newOwner(t, c, sa), newOwner(t, c, sb)
	take(t, ctx, z, sz, 0, LogStart(), "z")
	round(t, ctx, z, sz, Batch{Partition: 0, Updates: []Update{upd("k1", "z"), upd("k2", "z")}, Commands: 1})
	ta := take(t, ctx, a, sa, 0, LogStart(), "a")
	if out, err := a.Check(ctx); err != nil || len(out) != 0 {
		t.Fatalf("a check with nothing new: %+v, %v", out, err)
	}
	if o := round(t, ctx, z, sz, Batch{Partition: 0, Updates: []Update{upd("k1", "zombie")}, Commands: 2}); o.Result != Fenced {
		t.Fatalf("the zombie's write after a's claim at %d: %+v", ta.Epoch, o)
	}
	out, err := a.Check(ctx)
	if err != nil || len(out) != 2 || out[0].Result != Counted || out[1].Result != Counted ||
		!slices.Equal(keyStrings(out[0].Written.ForeignKeys), []string{"k1"}) {
		t.Fatalf("a check after the zombie's write: %+v, %v", out, err)
	}
	if repair := out[1].Written; repair.End-repair.Base != 2 {
		t.Fatalf("the repair of k1 wrote %d records, want k1 and a trailer", repair.End-repair.Base)
	}
	if st, _ := a.State(0); st.Offset != out[1].Written.End {
		t.Fatalf("a's state %+v after its repair ending at %d", st, out[1].Written.End)
	}
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	if got := countedKeys(entries, counts); got[len(got)-1] != "k1=z" {
		t.Fatalf("the changelog counts %q, want k1=z last", got)
	}
	if out, err := a.Check(ctx); err != nil || len(out) != 0 {
		t.Fatalf("a check after the repair: %+v, %v", out, err)
	}
	take(t, ctx, b, sb, 0, LogStart(), "b")
	if out, err := a.Check(ctx); err != nil || len(out) != 1 || out[0].Result != Fenced {
		t.Fatalf("a check after b's claim: %+v, %v", out, err)
	}
	if _, ok := a.State(0); ok {
		t.Fatal("a owns the partition after a check found it fenced")
	}
}
