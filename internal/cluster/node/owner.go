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
// of the cluster's N shards whose Committer is the round's Kafka
// transaction, with the ledger's slices (ledgerengine, Config.Cluster).
// Each round of the member (kafkalog.Member) feeds the commands it read,
// and those the node took for its own partitions (owner_local.go), to the
// engine, waits for them, applies in the same way the commands they owe
// partitions the node owns, and commits, in one transaction, their
// replies, the changelog records of the engine's batches and the commands
// owed to other nodes' partitions.
//
// When the owned partitions change, or a round that wrote records fails
// to commit, the node stops its rounds and builds its state again: it
// wipes its cache, writes the owned partitions' state into it from its
// local snapshot and the changelog records after it (package changelog),
// and opens the engine and the ledger on it. A partition the node kept
// reads no changelog record; one it gets back reads those written since
// it had it. A round that wrote no record (reads, refusals: its replies
// all to the node's own requests, held until a commit) changed no state,
// so one that fails to commit needs no rebuild: its replies are dropped,
// the member reads its commands again and the node takes its local
// commands again. Kafka refuses such a round's
// offsets (CONCURRENT_TRANSACTIONS) when it follows the previous commit
// before the brokers finished writing that one's markers.

// errMoved aborts a round begun on partitions the node no longer owns as
// they were built.
var errMoved = errors.New("node: owned partitions changed")

// idleWait bounds a round's wait for commands, so that a change of the
// owned partitions is acted on without traffic.
const idleWait = 200 * time.Millisecond

// state is the owner's engine and ledger over the owned partitions.
type state struct {
	gen    uint64
	eng    *engine.Engine
	ledger *ledgerengine.Ledger
	kv     *engine.Port
	seats  *engine.Port
	commit *committer
	// owned are the partitions the state was restored for.
	owned map[int32]bool
	// held are the replies of the open round to the node's own requests,
	// handed to their callers once it committed.
	held []kafkalog.Output
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
	for ctx.Err() == nil {
		if st == nil || st.gen != n.gen.Load() {
			st.close()
			st = n.build(ctx)
			continue
		}
		wait, cancel := context.WithTimeout(ctx, idleWait)
		var outs []kafkalog.Output
		local := &localRound{n: n, st: st}
		res, err := n.member.RoundWait(wait, ctx, n.cfg.MaxBatch, local, kept(n.apply(st), &outs))
		cancel()
		local.settle(err == nil && res.Committed, res.Aborted)
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) && res.Commands == 0 {
			n.flush(ctx, st)
			continue
		}
		if err == nil && res.Committed {
			err = n.snaps.Commit(outs, res.Changelog)
		}
		st.held = nil
		if err == nil && !res.Committed && res.Outputs == 0 {
			continue // changed nothing: its commands are read again as they are
		}
		if err != nil || (res.Commands > 0 && !res.Committed) {
			if !errors.Is(err, errMoved) {
				n.cfg.Logger.Warn("cluster: round not committed; rebuilding", "err", err)
			}
			n.setReady(false)
			st.close()
			st = nil
		}
	}
}

// build rebuilds the owner's state for the partitions owned now, retrying
// until it succeeds or ctx ends; nil if ctx ended.
func (n *Node) build(ctx context.Context) *state {
	for ctx.Err() == nil {
		gen := n.gen.Load()
		began, read := time.Now(), n.snaps.Read()
		st, err := n.restore(ctx, gen)
		if err == nil {
			n.built.Store(gen)
			n.setReady(gen == n.gen.Load())
			n.cfg.Logger.Info("cluster: partitions restored", "owned", n.member.Owned(), "elapsed", time.Since(began).Round(time.Millisecond), "changelog records read", n.snaps.Read()-read)
			return st
		}
		n.cfg.Logger.Warn("cluster: restoring partitions", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// restore replays the owned partitions' changelogs into a fresh cache and
// opens the engine and the ledger on it.
func (n *Node) restore(ctx context.Context, gen uint64) (*state, error) {
	dir := filepath.Join(n.cfg.Dir, "cache")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	owned := n.member.Owned()
	if err := n.replayChangelogs(ctx, dir, owned); err != nil {
		return nil, err
	}
	return n.open(dir, gen, owned)
}

// open opens the engine, the ledger and the other workloads on the cache
// in dir, restored for gen with the partitions owned.
func (n *Node) open(dir string, gen uint64, owned []int32) (*state, error) {
	st := &state{gen: gen, commit: &committer{}, owned: make(map[int32]bool, len(owned))}
	for _, p := range owned {
		st.owned[p] = true
	}
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

// replayChangelogs writes the owned partitions' state into a store in dir.
func (n *Node) replayChangelogs(ctx context.Context, dir string, owned []int32) error {
	db, err := store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return n.snaps.RestoreAll(ctx, db, owned)
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

// apply is the round's transform over st: it applies the batch, then,
// pass by pass, the commands the round owes partitions st owns
// (state.local), and returns the outputs of every pass.
func (n *Node) apply(st *state) kafkalog.Apply {
	return func(ctx context.Context, batch []kafkalog.Command) ([]kafkalog.Output, error) {
		if n.gen.Load() != st.gen {
			return nil, errMoved
		}
		var outs []kafkalog.Output
		for pass := 1; len(batch) > 0; pass++ {
			produced, err := n.applyPass(ctx, st, batch)
			if err != nil {
				return nil, err
			}
			batch = nil
			if pass < localPasses {
				produced, batch = st.local(produced)
			}
			outs = append(outs, produced...)
		}
		outs, st.held = calls.PackReplies(outs, n.holds)
		return outs, nil
	}
}

// localPasses bounds a round's passes: a chain of steps between
// partitions the node owns (an atomic batch's) goes on through Kafka
// after that many.
const localPasses = 8

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

// local takes out of outs the commands owed to partitions st owns (a
// credit to an account of another of them, a chain's next step), as the
// commands of the round's next pass. Applied in the round that owes them,
// they commit in its transaction, exactly once as the forwarded record a
// later round would read, and they cost no record, no read and no later
// round.
func (st *state) local(outs []kafkalog.Output) (rest []kafkalog.Output, next []kafkalog.Command) {
	rest = outs[:0]
	for _, o := range outs {
		if o.Kind == kafkalog.Forward && st.owned[o.Partition] {
			next = append(next, kafkalog.Command{Partition: o.Partition, Offset: -1, Key: o.Key, Value: o.Value})
			continue
		}
		rest = append(rest, o)
	}
	return rest, next
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
// decided in the round into the records of the member's open round, which
// commits them in its transaction.
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

// kept is apply keeping the outputs it returns in *outs, for the copy to
// take once the round commits.
func kept(apply kafkalog.Apply, outs *[]kafkalog.Output) kafkalog.Apply {
	return func(ctx context.Context, batch []kafkalog.Command) ([]kafkalog.Output, error) {
		o, err := apply(ctx, batch)
		*outs = o
		return o, err
	}
}
