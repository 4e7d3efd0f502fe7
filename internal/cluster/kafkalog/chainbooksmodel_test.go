package kafkalog

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The forwards' model on real Owners: nodes over kfake, one Owner and
// Forwarder per node, whose rounds go through a chain round's book code
// (roundBooks: judge, parts, settle) and Owner.Round, as ChainMember's do,
// over a network that loses, repeats and reorders what the Forwarders
// send; nodes crash before or after their writes, new ones take their
// partitions (Owner.Take, from the log's start) and the old ones write on
// as zombies, fenced by the Writer.

// bookNode is a node owning one partition: its Owner, Forwarder and
// shard, the shard's state as its writes that counted left it.
type bookNode struct {
	w     *Writer
	o     *Owner
	f     *Forwarder
	s     *shard
	alive bool // neither crashed nor told its write did not count
}

// bookSim runs the nodes of a kfake cluster's partitions.
type bookSim struct {
	lossyNet
	t      *testing.T
	ctx    context.Context
	c      Config
	nodes  [][]*bookNode         // per partition, the last current
	issued map[[2]int32][]string // per source and destination, the values owed by writes that counted
	now    time.Time
	gen    int32
	values int
	seen   *bookSeen
}

// bookSeen counts what the schedules had, over all seeds.
type bookSeen struct{ issued, refused, crashes, fenced int }

// commands takes the messages to p off the network (inbox), as p's local
// commands.
func (s *bookSim) commands(p int32) []Command {
	var in []Command
	for _, m := range s.inbox(p) {
		in = append(in, Command{Partition: p, Offset: -1, Key: m.key, Value: m.value})
	}
	return in
}

// current is p's current node, nil if it crashed.
func (s *bookSim) current(p int32) *bookNode {
	ns := s.nodes[p]
	if len(ns) == 0 || !ns[len(ns)-1].alive {
		return nil
	}
	return ns[len(ns)-1]
}

// take has a new node take p in the next generation, restoring it from
// the log's start, and start its forwards once its first write counted.
func (s *bookSim) take(p int32) *bookNode {
	s.gen++
	w, err := NewWriter(s.c)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(w.Close)
	n := &bookNode{w: w, s: newShard(), alive: true}
	n.o, n.f = NewOwner(w, s.c, n.s.restate), NewForwarder(s.send, fwdResend)
	tk, err := n.o.Take(s.ctx, p, LogStart(), Claim{Generation: s.gen, Member: "n" + strconv.Itoa(int(s.gen))}, func(k, v []byte) error {
		n.s.set(p, k, v)
		return nil
	})
	if err != nil || tk.First.Result != Counted {
		s.t.Fatalf("partition %d's take: %+v, %v", p, tk, err)
	}
	book, _ := n.o.Book(p)
	n.f.Take(p, book, s.now)
	s.nodes[p] = append(s.nodes[p], n)
	return n
}

// applyModel is the nodes' transform: "work" owes the partition its value
// names a forward; "fwd", a forward applied, appends its value to the
// shard's key of its source.
func (s *bookSim) applyModel(n *bookNode, batch []Command) []Output {
	var outs []Output
	changed := map[string][]byte{}
	for _, c := range batch {
		head, v, _ := strings.Cut(string(c.Value), "|")
		switch string(c.Key) {
		case "work":
			to, _ := strconv.Atoi(head)
			outs = append(outs, Output{Kind: Forward, Partition: int32(to), Key: []byte("fwd"), Value: []byte(strconv.Itoa(int(c.Partition)) + "|" + v), From: c.Partition})
		case "fwd":
			key := "got/" + head
			got, ok := changed[key]
			if !ok {
				got, _ = n.s.current(c.Partition, []byte(key))
			}
			changed[key] = append(got[:len(got):len(got)], ","+v...)
			outs = append(outs, Output{Kind: Change, Partition: c.Partition, Key: []byte(key), Value: changed[key]})
		default:
			s.t.Fatalf("partition %d applied %q=%q", c.Partition, c.Key, c.Value)
		}
	}
	return outs
}

// work is up to two new commands of p, each owing another partition a
// forward.
func (s *bookSim) work(p int32) []Command {
	var out []Command
	for range s.rng.IntN(3) * btoi(s.lossy) {
		to := (p + 1 + s.rng.Int32N(int32(len(s.nodes)-1))) % int32(len(s.nodes))
		s.values++
		out = append(out, Command{Partition: p, Offset: -1, Key: []byte("work"), Value: []byte(strconv.Itoa(int(to)) + "|v" + strconv.Itoa(s.values))})
	}
	return out
}

// round has n, p's node or a zombie, run a round on what came and new
// work, as ChainMember.RoundWait does after it reads: the books judge the
// commands, the others are applied, and the partition's batch, with its
// book, is written. A node may crash before its write, or after it and
// before its Forwarder sends; a node whose write does not count is gone.
func (s *bookSim) round(p int32, n *bookNode) {
	cmds := append(s.commands(p), s.work(p)...)
	books := newRoundBooks(n.o, n.f, Limits{Forwards: 4}, s.now)
	apply, refused, dropped := books.judge(cmds)
	if len(dropped) > 0 && n == s.current(p) {
		s.t.Fatalf("partition %d's owner dropped %v", p, dropped)
	}
	s.seen.refused += len(refused)
	outs := s.applyModel(n, apply)
	parts, err := books.parts(cmds, outs)
	if err != nil || books.err != nil {
		s.t.Fatal(err, books.err)
	}
	if len(parts) == 0 {
		return
	}
	if s.chance(12) {
		n.alive = false
		s.seen.crashes++
		return
	}
	out, err := n.o.Round(s.ctx, []Batch{parts[p].batch})
	if err != nil {
		s.t.Fatal(err)
	}
	if out[0].Result != Counted {
		n.alive = false
		s.seen.fenced++
		return
	}
	s.counted(n, parts[p].batch, outs)
	if s.chance(12) {
		n.alive = false
		s.seen.crashes++
		return
	}
	books.settle(p, out[0].Result)
}

// counted takes n's write of b that counted: its changes are the shard's
// state, and its forwards are owed.
func (s *bookSim) counted(n *bookNode, b Batch, outs []Output) {
	for _, u := range b.Updates {
		if !isForward(u.Key) {
			n.s.set(b.Partition, u.Key, u.Value)
		}
	}
	for _, o := range outs {
		if o.Kind == Forward {
			_, v, _ := strings.Cut(string(o.Value), "|")
			k := [2]int32{o.From, o.Partition}
			s.issued[k] = append(s.issued[k], v)
		}
	}
}

// step runs one thing at random: a new node's take of a partition (its
// current node crashed, or lives on as a zombie), a zombie's round, or the
// current node's; then the resend timers.
func (s *bookSim) step() {
	p := s.rng.Int32N(int32(len(s.nodes)))
	s.now = s.now.Add(time.Second)
	var zombies []*bookNode
	for _, n := range s.nodes[p][:len(s.nodes[p])-1] {
		if n.alive {
			zombies = append(zombies, n)
		}
	}
	switch cur := s.current(p); {
	case cur == nil || s.rng.IntN(15) == 0:
		if cur != nil && s.rng.IntN(2) == 0 {
			cur.alive = false
		}
		s.take(p)
	case len(zombies) > 0 && s.rng.IntN(3) == 0:
		s.round(p, zombies[s.rng.IntN(len(zombies))])
	default:
		s.round(p, cur)
	}
	for _, ns := range s.nodes {
		for _, n := range ns {
			if n.alive {
				n.f.Tick(s.now)
			}
		}
	}
}

// calm runs the current nodes, zombies gone, nothing lost, until nothing
// is owed nor in flight.
func (s *bookSim) calm(seed uint64) {
	s.lossy = false
	for i := 0; ; i++ {
		settled := len(s.net) == 0
		for p := range int32(len(s.nodes)) {
			n := s.current(p)
			if n == nil {
				n = s.take(p)
			}
			for _, z := range s.nodes[p] {
				z.alive = z == n
			}
			b, _ := n.o.Book(p)
			settled = settled && len(b.Owed()) == 0
		}
		if settled {
			return
		}
		if i == 50 {
			s.t.Fatalf("seed %d: still owed or in flight after 50 calm rounds", seed)
		}
		s.now = s.now.Add(fwdResend)
		for p := range int32(len(s.nodes)) {
			s.round(p, s.current(p))
			s.current(p).f.Tick(s.now)
		}
	}
}

// check restores each partition with a new owner, from the log's start:
// each applied from each source exactly the values the sources' writes
// that counted owed, in order; and the last record of every forward that
// counts is its tombstone.
func (s *bookSim) check(seed uint64) {
	for p := range int32(len(s.nodes)) {
		n := s.take(p)
		got := n.s.of(p)
		for from := range int32(len(s.nodes)) {
			want := ""
			if vs := s.issued[[2]int32{from, p}]; len(vs) > 0 {
				want = "," + strings.Join(vs, ",")
			}
			if g := got["got/"+strconv.Itoa(int(from))]; g != want {
				s.t.Fatalf("seed %d: partition %d applied from %d %q, owed %q", seed, p, from, g, want)
			}
		}
		entries, counts, _ := readChangelog(s.t, s.ctx, s.c, p)
		last := map[string][]byte{}
		for i, e := range entries {
			if counts[i] && isForward(e.Key) {
				last[string(e.Key)] = e.Value
			}
		}
		for k, v := range last {
			if v != nil {
				s.t.Fatalf("seed %d: partition %d's forward record %q outlives its acknowledgement", seed, p, k)
			}
		}
	}
}

// Random schedules of rounds of real Owners over kfake, through a chain
// round's book code, with what the Forwarders send lost, repeated and
// reordered, nodes crashing before or after their writes, new nodes
// taking their partitions while the old ones write on as zombies, and
// sources refusing work past their limits; then a calm in which the
// current nodes go on: every forward a write that counted owed is applied
// exactly once, in order, as a restore from the log finds, and every
// forward record's last record that counts is a tombstone.
func TestChainBooksApplyEachForwardOnce(t *testing.T) {
	seen := &bookSeen{}
	for seed := range uint64(6) {
		_, ctx, c := fakeCluster(t, 3)
		s := &bookSim{lossyNet: lossyNet{rng: rand.New(rand.NewPCG(seed, 3)), lossy: true}, t: t, ctx: ctx, c: c,
			nodes: make([][]*bookNode, 3), issued: map[[2]int32][]string{}, now: time.Unix(0, 0), seen: seen}
		for p := range int32(3) {
			s.take(p)
		}
		for range 120 {
			s.step()
		}
		s.calm(seed)
		s.check(seed)
		for _, vs := range s.issued {
			seen.issued += len(vs)
		}
	}
	t.Logf("%+v", *seen)
	if seen.issued == 0 || seen.refused == 0 || seen.crashes == 0 || seen.fenced == 0 {
		t.Fatalf("the schedules never had some of what they test: %+v", *seen)
	}
}
