package kafkalog

import (
	"context"
	"slices"
	"testing"
)

// A round never writes the changelog of a partition its member does not
// write, though its transform gives it changes there: that partition's
// part is Fenced and not written, and the round's own partition counts.
func TestRoundWritesNoPartitionItsMemberDoesNotWrite(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return len(a.m.Owned()) == 2 }, "owns 2")
	b := joinChain(t, c, "b")
	b.await(t, ctx, func() bool { return len(b.m.Owned()) == 1 }, "owns 1")
	theirs := b.m.Owned()[0]
	mine := 1 - theirs
	a.await(t, ctx, func() bool { return slices.Equal(a.m.Owned(), []int32{mine}) }, "owns only its own")
	appendCommands(t, ctx, c, int(mine), 1) // to partition mine
	astray := func(_ context.Context, batch []Command) ([]Output, error) {
		return []Output{{Kind: Change, Partition: theirs, Key: []byte("astray"), Value: batch[0].Key}}, nil
	}
	var res ChainRound
	var err error
	for res.Commands == 0 && err == nil {
		res, err = a.m.RoundWait(ctx, ctx, 10, nil, astray)
	}
	if err != nil || len(res.Partitions) != 2 {
		t.Fatalf("round writing partition %d of b: %+v, %v", theirs, res, err)
	}
	for _, pr := range res.Partitions {
		if want := map[bool]Result{true: Counted, false: Fenced}[pr.Partition == mine]; pr.Result != want || (pr.Written.End > 0) != (want == Counted) {
			t.Errorf("partition %d's part of the round: %+v, want result %d", pr.Partition, pr, want)
		}
	}
	entries, _, _ := readChangelog(t, ctx, c, theirs)
	for _, e := range entries {
		if string(e.Key) == "astray" {
			t.Fatalf("partition %d's changelog holds a change astray at %d", theirs, e.Offset)
		}
	}
}
