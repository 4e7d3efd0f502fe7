package kafkalog

import (
	"reflect"
	"testing"
	"time"
)

// CheckSnapshot finds nothing to doubt in the copy a take restored, even
// once later rounds wrote past it, and doubts a copy whose topic, offset
// or age does not fit the changelog.
func TestCheckSnapshotDoubtsACopyThatDoesNotFit(t *testing.T) {
	ctx, c := newCluster(t, 1)
	sh := newShard()
	o := newOwner(t, c, sh)
	snap := take(t, ctx, o, sh, 0, LogStart(), "a").Restored.Snapshot
	b := Batch{Partition: 0, Updates: []Update{{Key: []byte("k"), Value: []byte("v")}}, Commands: 1}
	if out := round(t, ctx, o, sh, b); out.Result != Counted {
		t.Fatalf("round: %+v", out)
	}
	if doubt, err := CheckSnapshot(ctx, c, 0, snap); err != nil || doubt != "" {
		t.Fatalf("a fresh copy: doubt %q, %v", doubt, err)
	}
	wrong := map[string]Snapshot{}
	s := snap
	s.Topic[0]++
	wrong["another topic"] = s
	s = snap
	s.Offset += 100
	wrong["past the end"] = s
	s = snap
	s.Taken = time.Now().Add(-13 * time.Hour) // the default delete.retention.ms is 24 h
	wrong["too old"] = s
	for name, s := range wrong {
		if doubt, err := CheckSnapshot(ctx, c, 0, s); err != nil || doubt == "" {
			t.Errorf("%s: doubt %q, %v; want a doubt", name, doubt, err)
		}
	}
}

func TestChainStateReadsBackAsACopyKeptIt(t *testing.T) {
	last := Trailer{Epoch: 7, Commands: 42}
	last.Book.Owe(3, []byte("k"), []byte("credit"))
	in := ChainState{Offset: 9, Epoch: 7, Term: Term{Era: 2, Generation: 5}, Last: &last}
	out, err := ReadChainState(in.Offset, AppendChainState(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	if out.Offset != in.Offset || out.Epoch != in.Epoch || out.Term != in.Term {
		t.Fatalf("read back offset %d epoch %d term %+v, want %d %d %+v", out.Offset, out.Epoch, out.Term, in.Offset, in.Epoch, in.Term)
	}
	if out.Last == nil || out.Last.Commands != last.Commands || !reflect.DeepEqual(out.Last.Book.Owed(), last.Book.Owed()) {
		t.Fatalf("read back last trailer %+v, want %+v", out.Last, last)
	}
}
