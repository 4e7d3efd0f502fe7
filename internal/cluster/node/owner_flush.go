package node

import (
	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// flushCommand is a ticket command that changes nothing.
var flushCommand = append([]byte{calls.WorkloadTickets}, ticketengine.Encode(&ticketengine.Flush{})...)

// flush has an idle owner write what its engine's own rounds left
// unwritten (a hold's expiry, the seat limit's release it forwards):
// those rounds run on the engine's Ticks, between the member's rounds,
// and their records go out with the next round's. An owner with no
// command waiting queues, for its own rounds, one that changes nothing
// for a partition it writes, so that a round comes.
func (n *Node) flush(st *state) {
	if !st.commit.pending() {
		return
	}
	if owned := n.Owned(); len(owned) > 0 {
		n.local.add(kafkalog.Command{Partition: owned[0], Offset: -1, Value: flushCommand})
	}
}

// pending reports whether records wait for a round.
func (c *committer) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.outs) > 0
}
