package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests run ChainMembers over kfake: membership, takes, seeks and
// drops. chainmember_broker_test.go runs them on a real broker.

// chainNode is what a node keeps for a ChainMember in the tests: its
// shard's state (restored by takes, changed by rounds that count), what
// its handlers were told, and the commands its counted rounds applied.
type chainNode struct {
	name string
	s    *shard
	o    *Owner
	m    *ChainMember

	mu      sync.Mutex
	taken   map[int32]int // takes per partition
	failed  map[int32]int // failed takes per partition
	revoked map[int32]int // revokes per partition
	applied map[string]int
	changed chan struct{}
	sent    *sentLog // what its Forwarder sent
}

// sentLog records what a node's Forwarder sends, from any goroutine, and
// hands it on to relay, if set.
type sentLog struct {
	mu    sync.Mutex
	w     wireLog
	relay Send
}

func (s *sentLog) send(to int32, key, value []byte) {
	s.mu.Lock()
	s.w.send(to, key, value)
	s.mu.Unlock()
	if s.relay != nil {
		s.relay(to, key, value)
	}
}

// take returns what was sent since the last take.
func (s *sentLog) take() []fwdMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.take()
}

// joinChain makes a ChainMember named name of c's group, restoring its
// partitions from the log's start into a shard of its own.
func joinChain(t testing.TB, c Config, name string) *chainNode {
	t.Helper()
	return joinChainRefusing(t, c, name, nil)
}

// joinChainRefusing is joinChain whose restores of the partitions in
// refuse fail with their error.
func joinChainRefusing(t testing.TB, c Config, name string, refuse map[int32]error) *chainNode {
	t.Helper()
	return joinChainWith(t, c, name, refuse, nil)
}

// joinChainWith is joinChainRefusing whose Forwarder's sends are handed on
// to relay, if set, and whose client takes opts besides.
func joinChainWith(t testing.TB, c Config, name string, refuse map[int32]error, relay Send, opts ...kgo.Opt) *chainNode {
	t.Helper()
	n := &chainNode{name: name, s: newShard(), taken: map[int32]int{}, failed: map[int32]int{}, revoked: map[int32]int{}, applied: map[string]int{}, changed: make(chan struct{}, 1), sent: &sentLog{relay: relay}}
	n.o = newOwner(t, c, n.s)
	m, err := JoinChain(c, n.o, NewForwarder(n.sent.send, time.Hour), ChainHandlers{
		Restore: func(_ context.Context, p int32) (ChainState, func(k, v []byte) error, error) {
			return LogStart(), func(k, v []byte) error { n.s.set(p, k, v); return nil }, refuse[p]
		},
		Taken:      func(_ context.Context, p int32, _ Taken) { n.tell(func() { n.taken[p]++ }) },
		TakeFailed: func(_ context.Context, p int32, _ error) { n.tell(func() { n.failed[p]++ }) },
		Revoked:    func(_ context.Context, ps []int32) { n.tell(func() { n.forget(ps) }) },
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	n.m = m
	t.Cleanup(m.Close)
	return n
}

// tell records what a handler or a round told and wakes await.
func (n *chainNode) tell(f func()) {
	n.mu.Lock()
	f()
	n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// forget drops the state of ps, as a node drops a partition it lost.
func (n *chainNode) forget(ps []int32) {
	for _, p := range ps {
		n.revoked[p]++
		n.s.mu.Lock()
		delete(n.s.keys, p)
		n.s.mu.Unlock()
	}
}

// await waits until cond holds of what n's handlers were told.
func (n *chainNode) await(t testing.TB, ctx context.Context, cond func() bool, what string) {
	t.Helper()
	for {
		n.mu.Lock()
		ok := cond()
		n.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-n.changed:
		case <-ctx.Done():
			t.Fatalf("%s: %s never held; owned %v", n.name, what, n.m.Owned())
		}
	}
}

// apply is the nodes' transform in the tests: each command sets key
// "k/<command key>" to the node's name and owes a reply.
func (n *chainNode) apply(_ context.Context, batch []Command) ([]Output, error) {
	outs := make([]Output, 0, 2*len(batch))
	for _, c := range batch {
		key := append([]byte("k/"), c.Key...)
		n.s.set(c.Partition, key, []byte(n.name))
		outs = append(outs,
			Output{Kind: Change, Partition: c.Partition, Key: key, Value: []byte(n.name)},
			Output{Kind: Reply, Partition: 0, Key: c.Key, Value: []byte(n.name), From: c.Partition})
	}
	return outs, nil
}

// round runs one of n's rounds, waiting for commands until wait ends, and
// records the commands of the partitions whose write counted. A partition
// that did not count is restored again by its next take.
func (n *chainNode) round(wait, ctx context.Context) (ChainRound, error) {
	var batch []Command
	res, err := n.m.RoundWait(wait, ctx, 50, nil, func(ctx context.Context, b []Command) ([]Output, error) {
		batch = b
		return n.apply(ctx, b)
	})
	if err != nil && wait.Err() == nil {
		return res, fmt.Errorf("%s's round: %w", n.name, err)
	}
	n.record(res, batch)
	return res, nil
}

// countedRound runs one of a's rounds of up to most commands, taking
// local's (nil: none), applying them with apply, and records what it
// applied (record); it fails tb unless the round read some and every
// partition's write counted. It returns the commands applied.
func countedRound(tb testing.TB, ctx context.Context, a *chainNode, most int, local Local, apply Apply) []Command {
	tb.Helper()
	var batch []Command
	res, err := a.m.RoundWait(ctx, ctx, most, local, func(ctx context.Context, b []Command) ([]Output, error) {
		batch = b
		return apply(ctx, b)
	})
	if err != nil || res.Commands == 0 || !res.Counted() {
		tb.Fatalf("%s's round: %+v, %v; want commands read and every write counted", a.name, res, err)
	}
	a.record(res, batch)
	return batch
}

// record counts the commands of batch whose partition's write counted in
// res as applied.
func (n *chainNode) record(res ChainRound, batch []Command) {
	counted := map[int32]bool{}
	for _, pr := range res.Partitions {
		counted[pr.Partition] = pr.Result == Counted
	}
	n.tell(func() {
		for _, c := range batch {
			if counted[c.Partition] {
				n.applied[string(c.Key)]++
			}
		}
	})
}

// runChains runs the nodes' rounds concurrently until their counted rounds
// applied n commands between them.
func runChains(t *testing.T, ctx context.Context, n int, nodes ...*chainNode) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := func() bool {
		total := 0
		for _, nd := range nodes {
			for _, k := range nd.appliedKeys() {
				total += k
			}
		}
		return total >= n
	}
	errs := make(chan error, len(nodes))
	for _, nd := range nodes {
		go func() {
			for ctx.Err() == nil {
				if _, err := nd.round(ctx, ctx); err != nil {
					errs <- err
					return
				}
				if done() {
					cancel()
				}
			}
			errs <- nil
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !done() {
		t.Fatalf("the rounds applied fewer than %d commands before the test's deadline", n)
	}
}

// exactlyOnceApplied checks that the nodes' counted rounds applied each of
// cmd-0 … cmd-(n-1) once, and returns who applied each.
func exactlyOnceApplied(t *testing.T, n int, nodes ...*chainNode) map[string]string {
	t.Helper()
	by := map[string]string{}
	for _, nd := range nodes {
		for k, times := range nd.appliedKeys() {
			if times != 1 || by[k] != "" {
				t.Errorf("%s applied by %s %d times, and by %q", k, nd.name, times, by[k])
			}
			by[k] = nd.name
		}
	}
	for i := range n {
		if by["cmd-"+strconv.Itoa(i)] == "" {
			t.Errorf("cmd-%d never applied in a counted round", i)
		}
	}
	return by
}

// appliedKeys are the commands n's counted rounds applied.
func (n *chainNode) appliedKeys() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.applied)
}

// A member takes each partition it is assigned before reading it, then
// reads its commands from the offset its last trailer that counts says
// (partition 0, written by a former owner), or from the group's committed
// offset when no trailer counts (partition 1, as a changelog of
// transactional rounds leaves it), or the start if none is committed
// (partition 2).
func TestChainMemberSeeksWhereTheTrailerSays(t *testing.T) {
	_, ctx, c := fakeCluster(t, 3)
	appendCommands(t, ctx, c, 0, 12) // cmd-i to partition i%3, at offset i/3
	former := newShard()
	fo := newOwner(t, c, former)
	take(t, ctx, fo, former, 0, LogStart(), "former")
	if o := round(t, ctx, fo, former, Batch{Partition: 0, Commands: 2}); o.Result != Counted {
		t.Fatalf("the former owner's round: %+v", o)
	}
	fo.Drop(0)
	commit := kadm.Offsets{}
	commit.AddOffset(c.CommandsTopic(), 1, 3, -1)
	if _, err := kadm.NewClient(newClient(t, c)).CommitOffsets(ctx, c.Group(), commit); err != nil {
		t.Fatal(err)
	}

	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return len(a.taken) == 3 }, "took 3 partitions")
	want := map[string]int{"cmd-6": 1, "cmd-9": 1, "cmd-10": 1, "cmd-2": 1, "cmd-5": 1, "cmd-8": 1, "cmd-11": 1}
	for !maps.Equal(a.appliedKeys(), want) {
		if len(a.appliedKeys()) > len(want) {
			break
		}
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.appliedKeys(); !maps.Equal(got, want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
	for p, end := range map[int32]int64{0: 4, 1: 4, 2: 4} {
		if at, ok := a.o.Commands(p); !ok || at != end {
			t.Errorf("partition %d's position %d (%v), want %d", p, at, ok, end)
		}
	}
}

// A partition the group moves to another member is dropped by its former
// owner, and its handlers are told, each time, even twice with no round
// between (GroupTransactSession would drop the second revoke); the new
// owner takes it, and only its writes count.
func TestChainMemberDropsEveryRevokedPartition(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return len(a.m.Owned()) == 2 }, "owns 2")
	b := joinChain(t, c, "b")
	b.await(t, ctx, func() bool { return len(b.m.Owned()) == 1 }, "owns 1")
	moved := b.m.Owned()[0]
	a.await(t, ctx, func() bool { return a.revoked[moved] == 1 }, "told partition "+strconv.Itoa(int(moved))+" revoked")
	if _, ok := a.o.Commands(moved); ok || slices.Contains(a.m.Owned(), moved) {
		t.Fatalf("a still writes partition %d: owned %v", moved, a.m.Owned())
	}
	b.m.Close()
	a.await(t, ctx, func() bool { return len(a.m.Owned()) == 2 }, "owns 2 again")
	d := joinChain(t, c, "d")
	d.await(t, ctx, func() bool { return len(d.m.Owned()) == 1 }, "owns 1")
	again := d.m.Owned()[0]
	a.await(t, ctx, func() bool { return len(a.m.Owned()) == 1 && a.revoked[again] > 0 }, "gave up a second partition")
	if _, ok := a.o.Commands(again); ok {
		t.Fatalf("a still writes partition %d", again)
	}

}

// A round under way when one of its partitions moves writes nothing
// there: the partition is reported Fenced, and its new owner reads its
// commands again from the position the partition's last write that
// counted left (a former member's, whose commands are not read again).
// Each command is applied once in rounds that count, and every change in
// the changelog counts.
func TestChainMemberRoundAcrossARebalance(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	z := joinChain(t, c, "z")
	appendCommands(t, ctx, c, 0, 4)
	runChains(t, ctx, 4, z)
	z.m.Close()
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return len(a.m.Owned()) == 2 }, "owns 2")
	// a's rounds go on until one reads commands of both partitions: d
	// joins the group while it applies them.
	n := 4
	var d *chainNode
	var inFlight []Command
	var res ChainRound
	for d == nil {
		appendCommands(t, ctx, c, n, 2)
		n += 2
		var err error
		res, err = a.m.RoundWait(ctx, ctx, 50, nil, func(ctx context.Context, b []Command) ([]Output, error) {
			inFlight = b
			if len(partitionsOf(b)) == 2 {
				d = joinChain(t, c, "d")
				d.await(t, ctx, func() bool { return len(d.m.Owned()) == 1 }, "owns 1")
			}
			return a.apply(ctx, b)
		})
		if err != nil {
			t.Fatal(err)
		}
		a.record(res, inFlight)
	}
	moved := d.m.Owned()[0]
	for _, pr := range res.Partitions {
		wantMoved := pr.Partition == moved
		if (pr.Result == Fenced) != wantMoved || (pr.Written.End > 0) == wantMoved {
			t.Errorf("a's round on partition %d (moved %d): %+v", pr.Partition, moved, pr)
		}
	}

	runChains(t, ctx, n-len(z.appliedKeys()), a, d)
	by := exactlyOnceApplied(t, n, z, a, d)
	for _, cmd := range inFlight {
		if (cmd.Partition == moved) != (by[string(cmd.Key)] == "d") {
			t.Errorf("%s of partition %d applied by %s; partition %d moved to d", cmd.Key, cmd.Partition, by[string(cmd.Key)], moved)
		}
	}
	for p := range c.Partitions {
		entries, counts, _ := readChangelog(t, ctx, c, p)
		for i, en := range entries {
			if en.Kind == KindChange && !counts[i] {
				t.Errorf("partition %d: %s's change of %s does not count", p, en.Value, en.Key)
			}
		}
	}
}

// A partition whose take fails holds no round of the member's other
// partitions: the rounds go on without it, taking it again before each
// one, except a partition whose claim is stale (a claim of a later
// generation holds it), which waits for the group to assign it anew.
func TestChainMemberRoundsGoOnPastAFailedTake(t *testing.T) {
	_, ctx, c := fakeCluster(t, 3)
	x := newShard()
	if _, err := newOwner(t, c, x).Take(ctx, 2, LogStart(), Claim{Generation: 1 << 20, Member: "x"}, func(k, v []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	appendCommands(t, ctx, c, 0, 9) // cmd-i to partition i%3
	a := joinChainRefusing(t, c, "a", map[int32]error{1: errors.New("no copy")})
	a.await(t, ctx, func() bool { return a.taken[0] == 1 && a.failed[1] == 1 && a.failed[2] == 1 }, "took 0, failed 1 and 2")
	want := map[string]int{"cmd-0": 1, "cmd-3": 1, "cmd-6": 1}
	for rounds := 1; !maps.Equal(a.appliedKeys(), want); rounds++ {
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		retook, stale := a.failed[1], a.failed[2]
		a.mu.Unlock()
		if retook != rounds+1 || stale != 1 {
			t.Fatalf("after %d rounds, partition 1's takes failed %d times, the stale partition 2's %d", rounds, retook, stale)
		}
	}
	if got := a.m.Owned(); !slices.Equal(got, []int32{0}) {
		t.Fatalf("a writes %v, want [0]", got)
	}
}

// A member's check that finds a partition claimed by another owner stops
// writing and reading it, as a round's fenced write does: its rounds go on
// for the other partitions.
func TestChainMemberCheckReleasesAFencedPartition(t *testing.T) {
	_, ctx, c := fakeCluster(t, 2)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 && a.taken[1] == 1 }, "took 0 and 1")
	x := newShard()
	take(t, ctx, newOwner(t, c, x), x, 0, LogStart(), "x")
	out, err := a.m.Check(ctx)
	if err != nil || len(out) != 1 || out[0].Partition != 0 || out[0].Result != Fenced {
		t.Fatalf("a's check after x's claim of 0: %+v, %v", out, err)
	}
	if got := a.m.Owned(); !slices.Equal(got, []int32{1}) {
		t.Fatalf("a writes %v after its check found 0 fenced, want [1]", got)
	}
	appendCommands(t, ctx, c, 0, 4) // cmd-i to partition i%2
	want := map[string]int{"cmd-1": 1, "cmd-3": 1}
	for !maps.Equal(a.appliedKeys(), want) {
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// retakingLocal is a Local whose first Take, while a round reads, has the
// member take partition p again, then gives the round a command of p read
// under the former take.
type retakingLocal struct {
	*testLocal
	t    *testing.T
	n    *chainNode
	p    int32
	done bool
}

func (l *retakingLocal) Take(max int) []Command {
	if !l.done {
		l.done = true
		if ok, err := l.n.m.take(context.Background(), l.n.m.g.cl, l.p, false); !ok || err != nil {
			l.t.Errorf("taking %d again: %v, %v", l.p, ok, err)
		}
	}
	return l.testLocal.Take(max)
}

// A command read under one take of a partition is not written under a
// later take of it: the partition, taken again while the round read, is
// reported Unknown, not written, and taken again before the next round.
func TestChainMemberWritesNoCommandUnderALaterTake(t *testing.T) {
	_, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	local := &retakingLocal{testLocal: newTestLocal(localCommand(0, "read-under-first")), t: t, n: a, p: 0}
	res, err := a.m.RoundWait(ctx, ctx, 10, local, a.apply)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Partitions) != 1 || res.Partitions[0].Result != Unknown || res.Partitions[0].Written.End > 0 {
		t.Fatalf("a round whose partition was taken again while it read: %+v", res.Partitions)
	}
	if owned := a.m.Owned(); len(owned) != 0 {
		t.Fatalf("a writes %v before taking 0 again", owned)
	}
}

// A retake of a partition an assignment took since the rounds listed it
// claims nothing: a second claim that failed would leave the member
// writing a partition its Owner and Forwarder dropped.
func TestChainMemberRetakesOnlyWhatIsLeftToRetake(t *testing.T) {
	_, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	if ok, err := a.m.take(ctx, a.m.g.cl, 0, true); ok || err != nil {
		t.Fatalf("a retake of 0, taken and not left to retake: %v, %v", ok, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.taken[0] != 1 {
		t.Fatalf("0 taken %d times, want 1", a.taken[0])
	}
}
