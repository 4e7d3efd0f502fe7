package kafkalog

import (
	"errors"
	"testing"
)

// epochRecords counts the epoch records of partition p.
func epochRecords(t *testing.T, entries []Entry) int {
	t.Helper()
	n := 0
	for _, e := range entries {
		if e.Kind == KindEpoch {
			n++
		}
	}
	return n
}

// An owner of a generation the group moved on from (paused, its write's
// outcome unknown) takes the partition again when it thaws: Take refuses
// it without a claim. If its claim lands all the same (its read came
// before the later owner's claim), it takes nothing: the owner in force
// goes on writing, and a restore up to the zombie's epoch refuses it. An
// owner of the group made again, its generations started over, takes the
// partition in the next era.
func TestOwnerRefusesAZombiesClaim(t *testing.T) {
	ctx, c := newCluster(t, 1)
	sa, sb, sc := newShard(), newShard(), newShard()
	a, b, cw := newOwner(t, c, sa), newOwner(t, c, sb), newOwner(t, c, sc)
	noop := func(_, _ []byte) error { return nil }
	if _, err := a.Take(ctx, 0, LogStart(), Claim{Generation: 1, Member: "a"}, noop); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Take(ctx, 0, LogStart(), Claim{Generation: 2, Member: "b"}, noop); err != nil {
		t.Fatal(err)
	}
	entries, _, _ := readChangelog(t, ctx, c, 0)
	before := epochRecords(t, entries)
	_, err := a.Take(ctx, 0, LogStart(), Claim{Generation: 1, Member: "a"}, noop)
	var stale *StaleClaimError
	if !errors.As(err, &stale) || !errors.Is(err, ErrStaleClaim) || stale.InForce != (Term{Generation: 2}) {
		t.Fatalf("a zombie's Take: %v", err)
	}
	if entries, _, _ := readChangelog(t, ctx, c, 0); epochRecords(t, entries) != before {
		t.Fatal("a refused Take appended an epoch record")
	}

	raced, err := a.w.Claim(ctx, 0, Claim{Generation: 1, Member: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if o := round(t, ctx, b, sb, Batch{Partition: 0, Updates: []Update{upd("k", "b")}, Commands: 1}); o.Result != Counted {
		t.Fatalf("the owner's round after a zombie's claim at %d: %+v", raced, o)
	}
	if _, err := RestoreChain(ctx, c, 0, LogStart(), raced, noop); !errors.Is(err, ErrNotAnEpoch) {
		t.Fatalf("a restore up to the zombie's claim: %v", err)
	}

	if _, err := cw.Take(ctx, 0, LogStart(), Claim{Generation: 1, Member: "c"}, noop); !errors.Is(err, ErrStaleClaim) {
		t.Fatalf("a claim of the group made again, in the era in force: %v", err)
	}
	tc, err := cw.Take(ctx, 0, LogStart(), Claim{Era: 1, Generation: 1, Member: "c"}, func(k, v []byte) error {
		sc.set(0, k, v)
		return nil
	})
	if err != nil || tc.First.Result != Counted || sc.of(0)["k"] != "b" {
		t.Fatalf("a claim in the next era: %+v, %v, restored %v", tc, err, sc.of(0))
	}
	if st, _ := cw.State(0); st.Term != (Term{Era: 1, Generation: 1}) {
		t.Fatalf("the new owner's state %+v", st)
	}
	if o := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 1}); o.Result != Fenced {
		t.Fatalf("the previous era's owner's round: %+v", o)
	}
}
