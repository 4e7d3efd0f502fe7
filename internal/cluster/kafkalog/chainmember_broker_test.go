package kafkalog

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// roundsUntil runs nd's rounds under ctx until stop ends, then sends
// their first error, or nil. stop ends only a round's wait for commands:
// a write it cut would be of unknown outcome, which a test counting the
// commands of counted rounds could not count.
func roundsUntil(stop, ctx context.Context, nd *chainNode, errs chan<- error) {
	for stop.Err() == nil {
		if _, err := nd.round(stop, ctx); err != nil {
			errs <- err
			return
		}
	}
	errs <- nil
}

// appending appends commands cmd-from … cmd-(from+n-1) as appendCommands
// does, in the background, then sends its error or nil.
func appending(ctx context.Context, c Config, from, n int, errs chan<- error) {
	p, err := NewProducer(c)
	if err != nil {
		errs <- err
		return
	}
	defer p.Close()
	for i := from; i < from+n && err == nil; i++ {
		key := []byte("cmd-" + strconv.Itoa(i))
		_, err = p.Append(ctx, int32(i)%c.Partitions, key, key)
	}
	errs <- err
}

// On a real broker, partitions move between two members while they run
// rounds and commands come: b joins once a applied the first third, and
// leaves, while the last third is appended, once it applied some of the
// second. Every command is applied exactly once in rounds that counted,
// and a third owner, restoring each partition from the log's start, finds
// each command's change exactly once among the changes that count, and
// reads on from the end of the commands.
func TestChainMembersApplyEachCommandOnceAcrossMoves(t *testing.T) {
	const n = 300
	ctx, c := newCluster(t, 4)
	appendCommands(t, ctx, c, 0, n/3)
	a := joinChain(t, c, "a")
	errs, appended := make(chan error, 2), make(chan error, 1)
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	go roundsUntil(actx, ctx, a, errs)
	a.await(t, ctx, func() bool { return len(a.applied) == n/3 }, fmt.Sprintf("applied %d", n/3))

	b := joinChain(t, c, "b")
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	go roundsUntil(bctx, ctx, b, errs)
	b.await(t, ctx, func() bool { return len(b.m.Owned()) == 2 }, "owns 2")
	appendCommands(t, ctx, c, n/3, n/3)
	b.await(t, ctx, func() bool { return len(b.applied) >= n/12 }, fmt.Sprintf("applied %d", n/12))
	go appending(ctx, c, 2*n/3, n/3, appended)
	stopB()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	b.m.Close()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}

	a.await(t, ctx, func() bool { return len(a.applied)+len(b.appliedKeys()) >= n }, fmt.Sprintf("applied %d in all", n))
	stopA()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	exactlyOnceApplied(t, n, a, b)

	if foreign := restoredOnce(t, ctx, c, n); len(foreign) != 0 {
		t.Errorf("the last changes of %q do not count", foreign)
	}
}

// restoreEach has an owner of its own take every partition of c from the
// log's start, under a claim above any member's, and gives change each
// change that counts, with its partition. It returns the owner and each
// partition's take.
func restoreEach(t *testing.T, ctx context.Context, c Config, change func(p int32, k, v []byte)) (*Owner, []Taken) {
	t.Helper()
	o := newOwner(t, c, newShard())
	takes := make([]Taken, c.Partitions)
	for p := range c.Partitions {
		tk, err := o.Take(ctx, p, LogStart(), Claim{Generation: 1 << 30, Member: "third"}, func(k, v []byte) error {
			change(p, k, v)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		takes[p] = tk
	}
	return o, takes
}

// restoredOnce checks, through restoreEach, that each of cmd-0 …
// cmd-(n-1), cmd-i appended to partition i % Partitions, has exactly one
// change among those that count, and that the restoring owner reads on
// from the end of those commands. It returns the keys whose last change
// does not count (Restored.Foreign).
func restoredOnce(t *testing.T, ctx context.Context, c Config, n int) (foreign []string) {
	t.Helper()
	changes := map[string]int{}
	o, takes := restoreEach(t, ctx, c, func(_ int32, k, _ []byte) { changes[string(k)]++ })
	for p := range c.Partitions {
		for i := p; i < int32(n); i += c.Partitions {
			if key := "k/cmd-" + strconv.Itoa(int(i)); changes[key] != 1 {
				t.Errorf("partition %d: %s's change counts %d times", p, key, changes[key])
			}
		}
		if at, _ := o.Commands(p); at != commandsEnd(c, n, p) {
			t.Errorf("partition %d: the third owner reads on from %d, want %d", p, at, commandsEnd(c, n, p))
		}
		foreign = append(foreign, keyStrings(takes[p].Restored.Foreign)...)
	}
	return foreign
}

// commandsEnd is the offset after partition p's last command of cmd-0 …
// cmd-(n-1), cmd-i appended to partition i % Partitions.
func commandsEnd(c Config, n int, p int32) int64 {
	return (int64(n) - int64(p) + int64(c.Partitions) - 1) / int64(c.Partitions)
}

// relayingMember is a member of c that took partitions 0 and 1, whose
// Forwarder appends each value it sends times times to the commands
// topic, through the producer it returns.
func relayingMember(t *testing.T, ctx context.Context, c Config, times int) (*chainNode, *Producer) {
	t.Helper()
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	relay := func(to int32, key, value []byte) {
		for range times {
			if _, err := p.Append(ctx, to, key, value); err != nil {
				t.Errorf("sending to %d: %v", to, err)
			}
		}
	}
	a := joinChainWith(t, c, "a", nil, relay)
	a.await(t, ctx, func() bool { return a.taken[0] == 1 && a.taken[1] == 1 }, "took 0 and 1")
	return a, p
}

// On a real broker, a member's Forwarder sends through the commands topic,
// every value twice: the forwards partition 0's commands owe partition 1,
// and the answers. Each forward is applied once; once every
// acknowledgement is recorded, partition 0 owes nothing and the last
// record of each of its forwards that counts is a tombstone.
func TestChainMemberForwardsThroughTheCommandsTopic(t *testing.T) {
	const n = 40
	ctx, c := newCluster(t, 2)
	a, p := relayingMember(t, ctx, c, 2)
	for i := range n {
		key := []byte("owe-" + strconv.Itoa(i))
		if _, err := p.Append(ctx, 0, key, key); err != nil {
			t.Fatal(err)
		}
	}
	var fa owingApply
	applied := map[string]int{}
	done := func() bool {
		b, _ := a.o.Book(0)
		return len(applied) == n && b.Acknowledged(1) == n
	}
	for !done() {
		if _, err := a.m.RoundWait(ctx, ctx, 50, nil, fa.apply); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range fa.seen {
			if cmd.Partition == 1 {
				applied[string(cmd.Key)]++
			}
		}
		fa.seen = nil
	}
	for i := range n {
		if k := "owe-" + strconv.Itoa(i); applied[k] != 1 {
			t.Errorf("partition 1 applied %s %d times", k, applied[k])
		}
	}
	if b, _ := a.o.Book(0); len(b.Owed()) != 0 || b.assigned[1] != n {
		t.Errorf("partition 0's book owes %d, assigned %d, want none of %d", len(b.Owed()), b.assigned[1], n)
	}
	last := map[string]string{}
	for _, r := range forwardRecords(t, ctx, c, 0) {
		k, v, _ := strings.Cut(r, "=")
		last[k] = v
	}
	for k, v := range last {
		if v != "-" {
			t.Errorf("partition 0's forward record %q outlives its acknowledgement", k)
		}
	}
	if len(last) != n {
		t.Errorf("partition 0 has %d forward records, want %d", len(last), n)
	}
}

// Records of several MiB, over Kafka's default limit of 1 MiB, go through:
// a command appended, a round's change and reply, and the forward it
// owes, sent through the commands topic and applied by its destination.
func TestLargeRecordsGoThrough(t *testing.T) {
	ctx, c := newCluster(t, 2)
	a, p := relayingMember(t, ctx, c, 1)
	big := bytes.Repeat([]byte("x"), 3<<20)
	if _, err := p.Append(ctx, 0, []byte("owe-big"), big); err != nil {
		t.Fatal(err)
	}
	var fa owingApply
	replies, forwarded := 0, false
	for !forwarded {
		res, err := a.m.RoundWait(ctx, ctx, 10, nil, fa.apply)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range res.Partitions {
			if pr.Result != Counted {
				t.Fatalf("partition %d's write: %+v", pr.Partition, pr)
			}
			for _, o := range pr.Send {
				if len(o.Value) == len(big) {
					replies++
				}
			}
		}
		for _, cmd := range fa.seen {
			if len(cmd.Value) != len(big) {
				t.Fatalf("command %s of partition %d has %d bytes, want %d", cmd.Key, cmd.Partition, len(cmd.Value), len(big))
			}
			forwarded = forwarded || cmd.Partition == 1
		}
		fa.seen = nil
	}
	if replies != 2 {
		t.Fatalf("%d replies of %d bytes, want 2: the command's and the forward's", replies, len(big))
	}
	restored := map[int32]int{}
	restoreEach(t, ctx, c, func(p int32, k, v []byte) {
		if string(k) == "k/owe-big" {
			restored[p] = len(v)
		}
	})
	for p := range c.Partitions {
		if restored[p] != len(big) {
			t.Errorf("partition %d restores k/owe-big of %d bytes, want %d", p, restored[p], len(big))
		}
	}
}
