package kafkalog

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// rounds runs m's rounds until n commands committed, and returns the
// changelog offset the last of them reached in partition 0.
func rounds(t *testing.T, ctx context.Context, m *Member, c Config, n int) int64 {
	t.Helper()
	var end int64
	for done := 0; done < n; {
		res, err := m.Round(ctx, n, echo(c, "n1", "v"))
		if err != nil || !res.Committed {
			t.Fatalf("round: %+v %v", res, err)
		}
		if res.Changelog[0] <= end {
			t.Fatalf("round of %d commands reached changelog offset %d, not past %d", res.Commands, res.Changelog[0], end)
		}
		done, end = done+res.Commands, res.Changelog[0]
	}
	return end
}

// restoreFrom returns the keys RestoreFrom reads from offset from, and the
// snapshot it returns.
func restoreFrom(t *testing.T, ctx context.Context, c Config, from int64) ([]string, Snapshot) {
	t.Helper()
	var keys []string
	snap, err := RestoreFrom(ctx, c, 0, from, func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, snap
}

// A committed round tells where its changelog records end; a copy at that
// offset reads none of them again, one at an earlier round's offset reads
// exactly the later round's, and CheckSnapshot doubts a copy whose topic,
// offset or age does not fit the changelog.
func TestSnapshotReadsOnlyTheTail(t *testing.T) {
	ctx, c := newCluster(t, 1)
	m := join(t, ctx, c, "n1", Handlers{})
	appendCommands(t, ctx, c, 0, 5)
	first := rounds(t, ctx, m, c, 5)
	if keys, snap := restoreFrom(t, ctx, c, 0); len(keys) != 5 || snap.Offset < first {
		t.Fatalf("from the start: %v, up to %d; want 5 records up to at least %d", keys, snap.Offset, first)
	}
	appendCommands(t, ctx, c, 5, 3)
	second := rounds(t, ctx, m, c, 3)
	keys, snap := restoreFrom(t, ctx, c, first)
	if len(keys) != 3 || keys[0] != "cmd-"+strconv.Itoa(5) {
		t.Fatalf("from the first rounds' end %d: %v, want the 3 later records", first, keys)
	}
	if keys, _ := restoreFrom(t, ctx, c, second); len(keys) != 0 {
		t.Fatalf("from the last round's end %d: %v, want none", second, keys)
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
