package kafkalog

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// These tests run a ChainMember's rounds over kfake with the books of
// forwards: the member owns partitions 0 and 1, the test carries what its
// Forwarder sends back to it as local commands, losing, repeating or
// reordering them at will.

// owingApply is the transform of the forwards' tests: each command sets
// k/<key> and owes a reply, and one of partition 0 whose key begins "owe"
// owes partition 1 a forward of itself. It records the commands it is given.
type owingApply struct{ seen []Command }

func (a *owingApply) apply(_ context.Context, batch []Command) ([]Output, error) {
	var outs []Output
	for _, c := range batch {
		a.seen = append(a.seen, c)
		key := append([]byte("k/"), c.Key...)
		outs = append(outs,
			Output{Kind: Change, Partition: c.Partition, Key: key, Value: c.Value},
			Output{Kind: Reply, Key: c.Key, Value: c.Value, From: c.Partition})
		if c.Partition == 0 && bytes.HasPrefix(c.Key, []byte("owe")) {
			outs = append(outs, Output{Kind: Forward, Partition: 1, Key: c.Key, Value: c.Value, From: c.Partition})
		}
	}
	return outs, nil
}

// took returns the keys and values of the commands given since the last
// took, "partition:key=value".
func (a *owingApply) took() []string {
	var out []string
	for _, c := range a.seen {
		out = append(out, string(rune('0'+c.Partition))+":"+string(c.Key)+"="+string(c.Value))
	}
	a.seen = nil
	return out
}

// booksMember is a member of a 2-partition cluster owning both, whose
// Forwarder has sent nothing yet.
func booksMember(t *testing.T, c Config, ctx context.Context) *chainNode {
	t.Helper()
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 && a.taken[1] == 1 }, "took 0 and 1")
	if sent := a.sent.take(); len(sent) != 0 {
		t.Fatalf("the takes of empty books sent %q", describeSent(t, sent))
	}
	return a
}

// chainRound runs one of n's rounds on cmds, as local commands, and the
// commands polled, and fails the test unless each partition counted.
func chainRound(t *testing.T, ctx context.Context, n *chainNode, apply Apply, cmds ...Command) ChainRound {
	t.Helper()
	res, err := n.m.RoundWait(ctx, ctx, 50, newTestLocal(cmds...), apply)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range res.Partitions {
		if pr.Result != Counted {
			t.Fatalf("partition %d's round: %+v", pr.Partition, pr)
		}
	}
	return res
}

// delivered are msgs as the local commands of their destinations.
func delivered(msgs ...fwdMsg) []Command {
	out := make([]Command, len(msgs))
	for i, m := range msgs {
		out[i] = Command{Partition: m.to, Offset: -1, Key: m.key, Value: m.value}
	}
	return out
}

// sentNow checks what n's Forwarder sent since the last check.
func sentNow(t *testing.T, n *chainNode, want ...string) []fwdMsg {
	t.Helper()
	msgs := n.sent.take()
	if got := describeSent(t, msgs); !slices.Equal(got, want) {
		t.Fatalf("sent:\n got %q\nwant %q", got, want)
	}
	return msgs
}

// forwardRecords are partition p's forward records in its changelog,
// "key=value" (value "-" for a tombstone), with whether each counts.
func forwardRecords(t *testing.T, ctx context.Context, c Config, p int32) []string {
	t.Helper()
	entries, counts, _ := readChangelog(t, ctx, c, p)
	var out []string
	for i, e := range entries {
		if !isForward(e.Key) || !counts[i] {
			continue
		}
		v := "-"
		if e.Value != nil {
			v = "set"
		}
		out = append(out, string(e.Key)+"="+v)
	}
	return out
}

// A round's forwards are owed in their source's book, written with its
// batch as forward records, and sent by the Forwarder once the write
// counts: the round's Send holds its replies only.
func TestChainRoundOwesItsForwardsInTheBook(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := booksMember(t, c, ctx)
	var fa owingApply
	res := chainRound(t, ctx, a, fa.apply, localCommand(0, "owe-x"), localCommand(1, "plain"))
	replies := 0
	for _, pr := range res.Partitions {
		for _, o := range pr.Send {
			if o.Kind != Reply || o.From != pr.Partition {
				t.Errorf("partition %d's round sends %+v", pr.Partition, o)
			}
			replies++
		}
	}
	if replies != 2 {
		t.Errorf("the round's Send holds %d replies, want 2", replies)
	}
	sentNow(t, a, "F 0->1 #1 owe-x")
	if b, _ := a.o.Book(0); len(b.Owed()) != 1 || b.assigned[1] != 1 {
		t.Errorf("partition 0's book after the round owes %+v, assigned %d", b.Owed(), b.assigned[1])
	}
	if got, want := forwardRecords(t, ctx, c, 0), []string{string(forwardKey(1, 1)) + "=set"}; !slices.Equal(got, want) {
		t.Errorf("partition 0's forward records %q, want %q", got, want)
	}
}

// A forward sent twice, in one round and again in a later one, is applied
// once, as the command it carries (without its tag); each time it came
// the destination acknowledges it once its write counts. The
// acknowledgement, taken by the source's next round, is recorded in the
// source's book, and that round's write deletes the forward's record.
func TestChainRoundAppliesAForwardOnceAndItsAcknowledgementDeletesIt(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := booksMember(t, c, ctx)
	var fa owingApply
	chainRound(t, ctx, a, fa.apply, localCommand(0, "owe-x"))
	fa.took()
	fwd := sentNow(t, a, "F 0->1 #1 owe-x")

	chainRound(t, ctx, a, fa.apply, delivered(fwd[0], fwd[0])...)
	if got, want := fa.took(), []string{"1:owe-x=owe-x"}; !slices.Equal(got, want) {
		t.Fatalf("a round given the forward twice applied %q, want %q", got, want)
	}
	sentNow(t, a, "A 0: 1 acked 1")
	chainRound(t, ctx, a, fa.apply, delivered(fwd[0])...)
	if got := fa.took(); len(got) != 0 {
		t.Fatalf("a later round applied the forward again: %q", got)
	}
	ack := sentNow(t, a, "A 0: 1 acked 1")

	res := chainRound(t, ctx, a, fa.apply, delivered(ack[0])...)
	if got := fa.took(); len(got) != 0 || len(res.Dropped) != 0 {
		t.Fatalf("a round given an acknowledgement applied %q, dropped %v", got, res.Dropped)
	}
	if b, _ := a.o.Book(0); len(b.Owed()) != 0 || b.Acknowledged(1) != 1 {
		t.Errorf("partition 0's book after the acknowledgement owes %+v, acknowledged %d", b.Owed(), b.Acknowledged(1))
	}
	key := string(forwardKey(1, 1))
	if got, want := forwardRecords(t, ctx, c, 0), []string{key + "=set", key + "=-"}; !slices.Equal(got, want) {
		t.Errorf("partition 0's forward records %q, want %q", got, want)
	}
}

// A forward that comes before the one it follows is not applied: the
// destination answers at once with the sequence it expects, from which
// the source sends again, in order, what it owes; those are applied in
// order.
func TestChainRoundAnswersAnEarlyForwardAndAppliesNothing(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := booksMember(t, c, ctx)
	var fa owingApply
	chainRound(t, ctx, a, fa.apply, localCommand(0, "owe-x"), localCommand(0, "owe-y"))
	fa.took()
	fwd := sentNow(t, a, "F 0->1 #1 owe-x", "F 0->1 #2 owe-y")

	chainRound(t, ctx, a, fa.apply, delivered(fwd[1])...)
	if got := fa.took(); len(got) != 0 {
		t.Fatalf("a round given the second forward alone applied %q", got)
	}
	expected := sentNow(t, a, "A 0: 1 expected 1")
	chainRound(t, ctx, a, fa.apply, delivered(expected...)...)
	again := sentNow(t, a, "F 0->1 #1 owe-x", "F 0->1 #2 owe-y")
	chainRound(t, ctx, a, fa.apply, delivered(again...)...)
	if got, want := fa.took(), []string{"1:owe-x=owe-x", "1:owe-y=owe-y"}; !slices.Equal(got, want) {
		t.Fatalf("the forwards sent again applied %q, want %q", got, want)
	}
	sentNow(t, a, "A 0: 1 acked 2")
}

// A partition that owes a destination as much as the limits allow has its
// commands refused, not applied, its position moving past them (the
// rounds go on until partition 0's position passes cmd-0); forwards
// to it and answers are still taken, and once an acknowledgement in the
// round brings it under the limits its next commands are applied.
func TestChainRoundRefusesThePartitionThatOwesTooMuch(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	c.ForwardLimits = Limits{Forwards: 2}
	a := booksMember(t, c, ctx)
	var fa owingApply
	chainRound(t, ctx, a, fa.apply, localCommand(0, "owe-x"), localCommand(0, "owe-y"))
	fa.took()
	fwd := sentNow(t, a, "F 0->1 #1 owe-x", "F 0->1 #2 owe-y")

	appendCommands(t, ctx, c, 0, 1) // cmd-0, partition 0's offset 0
	in := Command{Partition: 0, Offset: -1, Key: []byte("in"), Value: AppendForward(nil, Forwarded{From: 1, To: 0, Seq: 1, Value: []byte("in")})}
	var refused []Command
	cmds := []Command{in, localCommand(1, "other")}
	for at, _ := a.o.Commands(0); at < 1; at, _ = a.o.Commands(0) {
		refused = append(refused, chainRound(t, ctx, a, fa.apply, cmds...).Refused...)
		cmds = nil
	}
	if len(refused) != 1 || string(refused[0].Key) != "cmd-0" {
		t.Fatalf("refused %v, want cmd-0", refused)
	}
	if got := fa.took(); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "cmd-0") }) ||
		!slices.Contains(got, "0:in=in") || !slices.Contains(got, "1:other=other") {
		t.Fatalf("the rounds applied %q: want the forward in and other, not cmd-0", got)
	}

	chainRound(t, ctx, a, fa.apply, delivered(fwd...)...)
	fa.took()
	ack := sentNow(t, a, "A 1: 0 acked 1", "A 0: 1 acked 2")
	res := chainRound(t, ctx, a, fa.apply, append(delivered(ack[1]), localCommand(0, "after"))...)
	if got := fa.took(); len(res.Refused) != 0 || !slices.Equal(got, []string{"0:after=after"}) {
		t.Fatalf("after the acknowledgement, the round applied %q, refused %v", got, res.Refused)
	}
}

// Forwards and answers that do not decode, and answers naming a forward
// their source never owed, are dropped, observably, without failing the
// round.
func TestChainRoundDropsWhatDoesNotDecodeOrWasNeverOwed(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := booksMember(t, c, ctx)
	var fa owingApply
	bad := []Command{
		{Partition: 1, Offset: -1, Key: []byte("k"), Value: []byte{ForwardTag}},
		{Partition: 0, Offset: -1, Value: []byte{AnswerTag, 1}},
		{Partition: 0, Offset: -1, Value: AppendAnswers(nil, []Answer{{Destination: 1, Kind: Acked, Seq: 9}})},
	}
	res := chainRound(t, ctx, a, fa.apply, append(bad, localCommand(1, "plain"))...)
	if len(res.Dropped) != len(bad) {
		t.Fatalf("dropped %v, want the %d bad ones", res.Dropped, len(bad))
	}
	if got := fa.took(); !slices.Equal(got, []string{"1:plain=plain"}) {
		t.Fatalf("applied %q, want plain alone", got)
	}
}

// A forward that comes from a partition none of the round's commands is
// of (as an engine's tick owes one) is owed in that partition's book,
// which the round writes, and sent once its write counts.
func TestChainRoundOwesTheForwardsOfAPartitionWithoutCommands(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := booksMember(t, c, ctx)
	tick := func(context.Context, []Command) ([]Output, error) {
		return []Output{{Kind: Forward, Partition: 1, Key: []byte("tick"), Value: []byte("t1"), From: 0}}, nil
	}
	res := chainRound(t, ctx, a, tick, localCommand(1, "plain"))
	if len(res.Partitions) != 2 || res.Partitions[0].Partition != 0 || len(res.Partitions[0].Send) != 0 {
		t.Fatalf("the round's partitions: %+v", res.Partitions)
	}
	sentNow(t, a, "F 0->1 #1 t1")
	if got, want := forwardRecords(t, ctx, c, 0), []string{string(forwardKey(1, 1)) + "=set"}; !slices.Equal(got, want) {
		t.Errorf("partition 0's forward records %q, want %q", got, want)
	}
}
