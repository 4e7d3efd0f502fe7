package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/changelog"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// The owner's side of a node. The partitions a node owns run on an engine
// of the cluster's N shards whose Committer gathers the records of the
// engine's rounds, with the ledger's slices (ledgerengine,
// Config.Cluster). Each round of the member (kafkalog.ChainMember) feeds
// the commands it read, and those the node took for its own partitions
// (owner_local.go), to the engine, waits for them, and returns their
// outputs: the changelog records of the engine's batches, the commands
// owed to other partitions (forwards) and the replies. The member writes
// each partition's part as one write of its changelog, the forwards owed
// recorded in it, and says per partition whether the write counted; the
// node then moves the copies of the counted partitions on with their
// changes (changelog.Snapshots.CommitChain) and sends their replies
// (owner_replies.go). A forward goes out, through the Forwarder, only
// once the write owing it counted, and is applied by its destination's
// round by sequence, once, even when this node owns both partitions
// (owner_takes.go sends it to its own rounds).
//
// When the partitions the member writes change (owner_takes.go), or a
// partition's write does not count (fenced, or of unknown outcome), the
// node builds its state again: it wipes its cache, loads into it the
// copies of the partitions the member writes now, which are current, and
// opens the engine and the ledger on it. The engine's cache runs ahead of
// the writes within a round; a write that does not count leaves the copy
// as it was, so the rebuild drops the round's changes. A take made at the
// start of a round (a partition taken again) has the round's apply build
// the state first.

// errMoved fails a round whose state cannot be built: the partitions the
// node writes kept changing until the round's context ended.
var errMoved = errors.New("node: owned partitions changed")

// idleWait bounds a round's wait for commands, so that a change of the
// owned partitions is acted on without traffic.
const idleWait = 200 * time.Millisecond

// roundTakeTime bounds the part of a round before its apply: the takes
// of partitions taken again, which restore them, and the gathering of its
// commands; RoundTimeout then bounds its apply and write, once the state
// is built (applyOn), so that neither a take's restore nor a rebuild
// counts against the write's time.
const roundTakeTime = 30 * time.Second

// checkEvery is how often the node checks its partitions' changelogs for
// a zombie's writes (kafkalog.ChainMember.Check): well within the
// changelog's min.compaction.lag.ms, before which a zombie's record must
// be repaired.
const checkEvery = time.Minute

// state is the owner's engine and ledger over the owned partitions.
type state struct {
	gen uint64
	// owned are the partitions the state was loaded with.
	owned  map[int32]bool
	eng    *engine.Engine
	ledger *ledgerengine.Ledger
	kv     *engine.Port
	seats  *engine.Port
	commit *committer
}

func (s *state) close() {
	if s != nil {
		s.ledger.Close()
		_ = s.eng.Close()
	}
}

// own runs the owner's rounds until ctx ends.
func (n *Node) own(ctx context.Context) {
	defer n.done.Done()
	var st *state
	defer func() {
		st.close()
		n.handOff(n.local.close())
	}()
	checked := time.Now()
	for ctx.Err() == nil {
		if n.takes.lost.Load() {
			n.leave()
			return
		}
		if st == nil || st.gen != n.gen.Load() {
			st.close()
			st = n.build(ctx)
			continue
		}
		if time.Since(checked) >= checkEvery {
			n.check(ctx)
			checked = time.Now()
		}
		wait, cancel := context.WithTimeout(ctx, idleWait)
		rctx, rcancel := context.WithCancel(ctx)
		clock := time.AfterFunc(roundTakeTime, rcancel)
		applying := func() { clock.Reset(n.cfg.RoundTimeout) }
		var outs []kafkalog.Output
		local := &localRound{n: n}
		res, err := n.member.Load().RoundWait(wait, rctx, n.cfg.MaxBatch, local, kept(n.applyOn(&st, applying), &outs))
		clock.Stop()
		cancel()
		rcancel()
		if err != nil && res.Commands == 0 && len(local.taken) == 0 && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
			n.flush(st)
			continue
		}
		if err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("cluster: round", "err", err)
		}
		n.cfg.Kafka.Meter.ChainRound(res)
		n.settle(local, res, outs)
	}
}

// check has the member check its partitions' changelogs for writes of
// others; a partition fenced or of unknown outcome makes the node build
// its state again.
func (n *Node) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.RoundTimeout)
	defer cancel()
	out, err := n.member.Load().Check(ctx)
	if err != nil && ctx.Err() == nil {
		n.cfg.Logger.Warn("cluster: checking the changelog", "err", err)
	}
	for _, o := range out {
		if o.Result != kafkalog.Counted {
			n.moved()
			return
		}
	}
}

// settle ends a round: the copies of its counted partitions take their
// changes and their replies go out; its local commands are settled
// (localRound.settle); a partition whose write did not count makes the
// node build its state again.
func (n *Node) settle(local *localRound, res kafkalog.ChainRound, outs []kafkalog.Output) {
	var counted []int32
	results := make(map[int32]kafkalog.Result, len(res.Partitions))
	rebuild := false
	for _, pr := range res.Partitions {
		results[pr.Partition] = pr.Result
		if pr.Result == kafkalog.Counted {
			counted = append(counted, pr.Partition)
		} else {
			rebuild = true
		}
	}
	n.commitCopies(outs, counted)
	for _, pr := range res.Partitions {
		if pr.Result == kafkalog.Counted {
			n.deliver(pr.Send)
		}
	}
	local.settle(results, res.Untaken, res.Refused)
	if rebuild {
		n.cfg.Logger.Warn("cluster: a partition's write did not count; rebuilding", "round", res.Partitions)
		n.moved()
	}
}

// build rebuilds the owner's state for the partitions owned now, retrying
// until it succeeds or ctx ends; nil if ctx ended, or if the node's disk
// failed it for good (brokenBy), which breaks the local copy.
func (n *Node) build(ctx context.Context) *state {
	for ctx.Err() == nil {
		gen := n.gen.Load()
		began := time.Now()
		owned := n.Owned()
		st, err := n.restore(gen, owned)
		if err == nil {
			n.built.Store(gen)
			n.setReady(gen == n.gen.Load())
			n.cfg.Logger.Info("cluster: partitions loaded", "owned", owned, "elapsed", time.Since(began).Round(time.Millisecond))
			return st
		}
		if brokenBy(err) {
			n.takes.breaks(owned...)
			n.cfg.Logger.Error("cluster: loading partitions", "err", err)
			return nil
		}
		n.cfg.Logger.Warn("cluster: loading partitions", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// brokenBy reports whether err, a build's, lasts until the node restarts:
// the local copy lost counted rounds (changelog.ErrLost), or a store's
// disk failed a write (store.Fault), after which the store takes none.
func brokenBy(err error) bool {
	var fault *store.Fault
	return errors.Is(err, changelog.ErrLost) || errors.As(err, &fault)
}

// restore loads the copies of the owned partitions into a fresh cache and
// opens the engine and the ledger on it.
func (n *Node) restore(gen uint64, owned []int32) (*state, error) {
	if err := n.takes.check(owned); err != nil {
		return nil, err
	}
	dir := filepath.Join(n.cfg.Dir, "cache")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := n.loadCopies(dir, owned); err != nil {
		return nil, err
	}
	st, err := n.open(dir, gen)
	if err != nil {
		return nil, err
	}
	st.owned = make(map[int32]bool, len(owned))
	for _, p := range owned {
		st.owned[p] = true
	}
	return st, nil
}

// open opens the engine, the ledger and the other workloads on the cache
// in dir, built for gen.
func (n *Node) open(dir string, gen uint64) (*state, error) {
	st := &state{gen: gen, commit: &committer{}}
	eng, err := engine.Open(engine.Config{
		Dir: dir, Shards: int(n.cfg.Kafka.Partitions), NoSync: true, Commit: st.commit,
		QueueCapacity: 4 * n.cfg.MaxBatch, MaxBatch: n.cfg.MaxBatch, Logger: n.cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	st.eng = eng
	st.ledger, err = ledgerengine.Open(eng, ledgerengine.Config{DefaultCurrency: n.cfg.Currency, Logger: n.cfg.Logger, Cluster: true})
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	st.kv = eng.Attach(kvstore.ClusterSlices(eng.Store(), eng.Shards()))
	if st.seats, err = ticketengine.AttachCluster(eng); err != nil {
		_ = eng.Close()
		return nil, err
	}
	eng.Start()
	return st, nil
}

// loadCopies writes the owned partitions' copies into a store in dir.
func (n *Node) loadCopies(dir string, owned []int32) error {
	db, err := store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return n.snaps.Load(db, owned)
}

// fed is a command of a round: its call, its outcome once the call
// completed (outcome), and where its reply goes.
type fed struct {
	call *engine.Call
	// cmd is the call's command and encode its outcome's encoder: fields,
	// not a closure over them, which would cost an allocation per command.
	cmd    engine.Command
	encode func(engine.Command) []byte
	inbox  int32
	rid    []byte
	// from is the command's partition, which its reply or what it owes
	// comes from (kafkalog.Output.From).
	from int32
	// then, if set, turns the outcome into a command for another
	// partition instead of a reply (a payment's debit, ticketengine.Debit).
	then func([]byte) kafkalog.Output
}

// maxBuilds bounds the builds of a round's apply: a state that still
// misses one of the round's partitions after them (the member gave it up
// meanwhile) gives the round up (errMoved).
const maxBuilds = 3

// serves reports whether st, built for generation gen, holds every
// partition of batch. A take publishes its partition to the member's
// rounds before the node hears of it (ChainHandlers.Taken), so a round
// may read commands of a partition no build loaded yet.
func (st *state) serves(gen uint64, batch []kafkalog.Command) bool {
	if st == nil || st.gen != gen {
		return false
	}
	for _, c := range batch {
		if !st.owned[c.Partition] {
			return false
		}
	}
	return true
}

// applyOn is the round's transform over the own loop's state *st, built
// again first if the partitions the member writes changed since, or the
// state misses one of the round's partitions: the state must hold every
// partition the round applies. applying is told when the apply begins, the state
// built.
func (n *Node) applyOn(st **state, applying func()) kafkalog.Apply {
	return func(ctx context.Context, batch []kafkalog.Command) ([]kafkalog.Output, error) {
		for builds := 0; !(*st).serves(n.gen.Load(), batch); builds++ {
			if builds == maxBuilds {
				return nil, errMoved
			}
			(*st).close()
			if *st = n.build(ctx); *st == nil {
				return nil, errMoved
			}
		}
		applying()
		return n.apply(*st)(ctx, batch)
	}
}

// apply is the round's transform over st: it applies the batch and
// returns its outputs. A command a round owes another partition (a
// credit, a chain's next step) is a Forward output even when the node
// owns that partition: without a transaction the two partitions' writes
// are not atomic together, so a credit applied beside a debit whose write
// turns out fenced would create money, and one applied in a write that
// counts beside a debit of unknown outcome could be applied again. Owed
// in its source's write and applied by sequence at its destination in a
// later round, it is applied once whatever becomes of either write.
func (n *Node) apply(st *state) kafkalog.Apply {
	return func(ctx context.Context, batch []kafkalog.Command) ([]kafkalog.Output, error) {
		return n.applyPass(ctx, st, batch)
	}
}

// applyPass feeds batch to the engine, waits until it is applied, and
// returns its outputs: the records of the engine's rounds, the commands
// they owe other partitions, and the replies.
func (n *Node) applyPass(ctx context.Context, st *state, batch []kafkalog.Command) ([]kafkalog.Output, error) {
	var outs []kafkalog.Output
	cmds := make([]fed, 0, len(batch))
	for _, c := range batch {
		f, err := n.feed(ctx, st, c)
		if err != nil {
			return nil, err
		}
		if f.call == nil { // malformed: answered if it can be, not applied
			if f.rid != nil {
				outs = append(outs, from(calls.Reply(f.inbox, f.rid, []byte(`{"fault":"malformed command"}`)), f.from))
			}
			continue
		}
		cmds = append(cmds, f)
	}
	for _, f := range cmds {
		if err := f.call.Wait(ctx); err != nil {
			return nil, err
		}
	}
	outs = append(outs, st.commit.take()...)
	for _, f := range cmds {
		switch {
		case f.then != nil:
			outs = append(outs, from(f.then(f.outcome()), f.from))
		case f.rid != nil:
			if v := f.outcome(); v != nil { // nil: a later round, or a chain's later step, replies
				outs = append(outs, from(calls.Reply(f.inbox, f.rid, v), f.from))
			}
		}
	}
	return outs, nil
}

// feed decodes c and queues it on its shard.
func (n *Node) feed(ctx context.Context, st *state, c kafkalog.Command) (fed, error) {
	f := fed{inbox: -1, from: c.Partition}
	if inbox, rid, ok := calls.ReplyAddress(c.Key); ok {
		f.inbox, f.rid = inbox, rid
	}
	if len(c.Value) > 0 && c.Value[0] == calls.WorkloadPayment {
		return n.feedPayment(ctx, st, c)
	}
	cmd, port, outcome, err := decode(st, c.Value)
	if err != nil {
		n.cfg.Logger.Error("cluster: dropping a malformed command", "partition", c.Partition, "offset", c.Offset, "err", err)
		return f, nil
	}
	if f.rid != nil {
		ledgerengine.SetReplyTo(cmd, c.Key)
		ticketengine.SetReplyTo(cmd, c.Key)
	}
	f.cmd, f.encode = cmd, outcome
	f.call, err = port(ctx, int(c.Partition), cmd)
	return f, err
}

// outcome is the encoded outcome of f's command, once its call completed.
func (f *fed) outcome() []byte { return f.encode(f.cmd) }

// decode decodes a command for its workload, and returns how to queue it
// and how to encode its outcome.
func decode(st *state, v []byte) (engine.Command, func(context.Context, int, engine.Command) (*engine.Call, error), func(engine.Command) []byte, error) {
	if len(v) == 0 {
		return nil, nil, nil, errors.New("empty command")
	}
	switch v[0] {
	case calls.WorkloadLedger:
		cmd, err := ledgerengine.Decode(v[1:])
		return cmd, st.ledger.Submit, ledgerengine.Outcome, err
	case calls.WorkloadKV:
		cmd, err := kvstore.DecodeCommand(v[1:])
		return cmd, st.kv.Submit, kvOutcome, err
	case calls.WorkloadTickets:
		cmd, err := ticketengine.Decode(v[1:])
		return cmd, st.seats.Submit, ticketengine.Outcome, err
	}
	return nil, nil, nil, fmt.Errorf("command of unknown workload %q", v[0])
}

func kvOutcome(cmd engine.Command) []byte { return kvstore.EncodeOutcome(cmd.(*kvstore.Command)) }

// committer is the engine's Committer on a node: it turns each round's
// batches, forwards and the replies the ledger owes for atomic batches
// decided in the round into the outputs of the member's open round, which
// writes them with its partitions' batches.
type committer struct {
	mu   sync.Mutex
	outs []kafkalog.Output
}

// Commit implements engine.Committer.
func (c *committer) Commit(r *engine.Round) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for shard, b := range r.Batches {
		if c.outs, err = changelog.Changes(c.outs, b, int32(shard)); err != nil {
			return err
		}
	}
	for _, f := range r.Forwards {
		if o, ok := ticketForward(f); ok {
			c.outs = append(c.outs, o)
			continue
		}
		if rp, ok := f.Cmd.(*ledgerengine.Reply); ok {
			if inbox, rid, ok := calls.ReplyAddress(rp.To); ok {
				c.outs = append(c.outs, from(calls.Reply(inbox, rid, rp.Value), int32(f.From)))
			}
			continue
		}
		v, err := ledgerengine.Encode(f.Cmd)
		if err != nil {
			return err
		}
		v = append([]byte{calls.WorkloadLedger}, v...)
		c.outs = append(c.outs, kafkalog.Output{Kind: kafkalog.Forward, Partition: int32(f.Shard), Value: v, From: int32(f.From)})
	}
	return nil
}

// from is o, owed by a command of partition p.
func from(o kafkalog.Output, p int32) kafkalog.Output {
	o.From = p
	return o
}

// take returns the records gathered since the last take.
func (c *committer) take() []kafkalog.Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	outs := c.outs
	c.outs = nil
	return outs
}

// kept is apply keeping the outputs it returns in *outs, for the copies
// of the partitions whose writes count to take.
func kept(apply kafkalog.Apply, outs *[]kafkalog.Output) kafkalog.Apply {
	return func(ctx context.Context, batch []kafkalog.Command) ([]kafkalog.Output, error) {
		o, err := apply(ctx, batch)
		*outs = o
		return o, err
	}
}
