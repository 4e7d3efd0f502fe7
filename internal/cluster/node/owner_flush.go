package node

import (
	"context"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// flushCommand is a ticket command that changes nothing.
var flushCommand = append([]byte{calls.WorkloadTickets}, ticketengine.Encode(&ticketengine.Flush{})...)

// flush has an idle owner commit what its engine's own rounds left
// uncommitted (a hold's expiry, the seat limit's release it forwards):
// those rounds run on the engine's Ticks, between the member's rounds, and
// their records go in the next round's transaction. An owner with no
// command to read appends one that changes nothing to a partition it owns,
// so that a round comes.
func (n *Node) flush(ctx context.Context, st *state) {
	owned := n.member.Owned()
	if len(owned) == 0 || !st.commit.pending() {
		return
	}
	if err := n.caller.Append(ctx, owned[0], flushCommand); err != nil && ctx.Err() == nil {
		n.cfg.Logger.Warn("cluster: appending a flush", "err", err)
	}
}

// pending reports whether records wait for a round's transaction.
func (c *committer) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.outs) > 0
}
