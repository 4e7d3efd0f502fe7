package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/cluster/changelog"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A partition the group assigns the node is taken by its member
// (kafkalog.ChainMember) in the group's callback, or before a round when
// it is taken again: the take restores it into the node's local copy
// (changelog.Snapshots.RestoreChain: from where the copy's chain state
// stands, or the changelog's start for a copy without one, such as one
// kept by transactional rounds), claims it, and makes its first write;
// the copy then records the owner's state (ChainRestore.Done). The
// engine's cache is not written by a take, since the node's rounds run
// on it meanwhile: every take, failed take and revoke bumps the node's
// generation, and the node builds its engine again on a cache loaded from
// the copies of the partitions it writes (owner.go), which are current
// (each counted write moves its partition's copy), so that no build reads
// the changelog.

// takes are the restores of the node's takes under way, between the
// member's Restore and Taken or TakeFailed, and the partitions whose copy
// could not record a counted write (broken).
type takes struct {
	mu       sync.Mutex
	restores map[int32]*changelog.ChainRestore
	// broken are partitions whose copy misses a write that counted: a
	// local write failed. The node cannot load them until it restarts,
	// when their restore reads the changelog from where their copy stands.
	broken map[int32]bool
	// lost is set once the copy misses a write that counted: the node
	// leaves the group (Node.leave).
	lost atomic.Bool
}

// begin keeps r as partition p's restore, closing any left before it.
func (t *takes) begin(p int32, r *changelog.ChainRestore) {
	t.mu.Lock()
	old := t.restores[p]
	t.restores[p] = r
	t.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// end returns and forgets partition p's restore, nil if none.
func (t *takes) end(p int32) *changelog.ChainRestore {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.restores[p]
	delete(t.restores, p)
	return r
}

// get returns partition p's restore, nil if none.
func (t *takes) get(p int32) *changelog.ChainRestore {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.restores[p]
}

// breaks marks ps as broken, and the copy as missing writes that
// counted.
func (t *takes) breaks(ps ...int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		t.broken[p] = true
	}
	t.lost.Store(true)
}

// check fails if one of ps is broken, or its take's restore is under
// way: its copy is not whole until the take is recorded (Taken).
func (t *takes) check(ps []int32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		if t.restores[p] != nil {
			return fmt.Errorf("node: partition %d's take is under way", p)
		}
	}
	if bad := slices.DeleteFunc(slices.Clone(ps), func(p int32) bool { return !t.broken[p] }); len(bad) > 0 {
		return fmt.Errorf("node: the local copy of partitions %v misses writes that counted: %w", bad, changelog.ErrLost)
	}
	return nil
}

// handlers are the member's handlers over the node.
func (n *Node) handlers() kafkalog.ChainHandlers {
	return kafkalog.ChainHandlers{Restore: n.restoreTake, Taken: n.taken, TakeFailed: n.takeFailed, Revoked: n.revoked}
}

// restoreTake is the member's Restore: partition p is restored into its
// copy. It logs where the changelog is read from (0: its start, the copy
// had nothing to give), which tells an operator what a take cost.
func (n *Node) restoreTake(ctx context.Context, p int32) (kafkalog.ChainState, func(key, value []byte) error, error) {
	from, r, err := n.snaps.RestoreChain(ctx, p)
	if err != nil {
		return from, nil, err
	}
	n.cfg.Logger.Info("cluster: restoring a partition", "partition", p, "changelog_from", from.Offset)
	n.takes.begin(p, r)
	return from, r.Apply, nil
}

// testHookTaken, if set, runs first in each Taken: tests hold a take
// there, after the member publishes it and before the node records it.
var testHookTaken func(p int32)

// taken is the member's Taken: the copy of p records the owner's state
// after the take's first write; builds wait for it (takes.check).
func (n *Node) taken(_ context.Context, p int32, t kafkalog.Taken) {
	defer n.moved()
	if testHookTaken != nil {
		testHookTaken(p)
	}
	defer n.takes.end(p)
	r := n.takes.get(p)
	if r == nil {
		return
	}
	st, ok := n.owner.State(p)
	if !ok {
		r.Close()
		return
	}
	if err := r.Done(t, st); err != nil {
		n.takes.breaks(p)
		n.cfg.Logger.Error("cluster: recording a take in the local copy", "partition", p, "err", err)
	}
}

// takeFailed is the member's TakeFailed: what the take restored stays in
// the copy, whose meta it did not move (a later restore reads it again),
// and never reaches the engine's cache, which loads only the partitions
// the member writes.
func (n *Node) takeFailed(_ context.Context, p int32, err error) {
	if r := n.takes.end(p); r != nil {
		r.Close()
	}
	n.cfg.Logger.Warn("cluster: taking a partition", "partition", p, "err", err)
	n.moved()
}

// commitCopies adds the changes of the round's partitions whose writes
// counted to their copies, with the owner's state of each; a copy that
// cannot take them is broken.
func (n *Node) commitCopies(outs []kafkalog.Output, counted []int32) {
	if len(counted) == 0 {
		return
	}
	states := make(map[int32]kafkalog.ChainState, len(counted))
	for _, p := range counted {
		if st, ok := n.owner.State(p); ok {
			states[p] = st
		}
	}
	if err := n.snaps.CommitChain(outs, states); err != nil {
		n.takes.breaks(slices.Collect(maps.Keys(states))...)
		n.cfg.Logger.Error("cluster: recording a round in the local copy", "err", err)
		n.moved()
	}
}

// leave takes the node out of the group once its local copy misses
// writes that counted (takes.breaks): it cannot load its partitions
// until it restarts, when their restores read the changelog from where
// the copy stands, so it lets the others take them rather than hold them
// unserved. It stays unready and goes on as a front node only, sending
// every command to its partition's owner (its queue is closed once the
// owner's loop returns); its peers' entry lists no partition, so that
// the others send it none.
func (n *Node) leave() {
	n.cfg.Logger.Error("cluster: the local copy misses writes that counted; leaving the group until the node restarts")
	n.setReady(false)
	n.leaveGroup()
	n.peers.Publish(nil)
}

// sendForward is the Forwarder's Send: a forward or an answer for
// partition p goes to the node's own rounds if its member writes p, over
// the peer link to p's owner if one is up, else to the commands topic, in
// the background. A send that is lost is sent again by the Forwarder.
func (n *Node) sendForward(p int32, key, value []byte) {
	if n.writes(p) && n.local.add(kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value}) {
		return
	}
	if n.peers.Forward(p, key, value) {
		return
	}
	n.forwards.start(func() {
		if err := n.caller.Send(p, key, value); err != nil {
			n.cfg.Logger.Debug("cluster: sending a forward", "partition", p, "err", err)
		}
	})
}

// tickForwards has the Forwarder send again what stays unacknowledged,
// until ctx ends.
func (n *Node) tickForwards(ctx context.Context) {
	defer n.done.Done()
	t := time.NewTicker(forwardTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n.fwd.Tick(now)
		}
	}
}
