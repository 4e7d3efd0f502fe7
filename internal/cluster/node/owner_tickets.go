package node

import (
	"context"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// ticketForward is the record of a ticketing command a round owes
// another partition: a command of the tickets workload, or a payment's
// debit; false for any other.
func ticketForward(f engine.Forward) (kafkalog.Output, bool) {
	var v []byte
	switch c := f.Cmd.(type) {
	case *ticketengine.Debit:
		v = append([]byte{calls.WorkloadPayment}, c.Encode()...)
	case ticketengine.Command:
		v = append([]byte{calls.WorkloadTickets}, ticketengine.Encode(c)...)
	default:
		return kafkalog.Output{}, false
	}
	return kafkalog.Output{Kind: kafkalog.Forward, Partition: int32(f.Shard), Value: v, From: int32(f.From)}, true
}

// feedPayment queues a payment's debit on the ledger's shard of its
// partition; its outcome is forwarded to the reservation's partition.
func (n *Node) feedPayment(ctx context.Context, st *state, c kafkalog.Command) (fed, error) {
	f := fed{inbox: -1, from: c.Partition}
	d, err := ticketengine.DecodeDebit(c.Value[1:])
	if err == nil {
		if f.cmd, err = ledgerengine.Decode(d.Transfer); err == nil {
			f.encode = ledgerengine.Outcome
			f.then = func(outcome []byte) kafkalog.Output {
				end, _ := ticketForward(engine.Forward{Shard: d.Area, Cmd: d.End(outcome)})
				return end
			}
			f.call, err = st.ledger.Submit(ctx, int(c.Partition), f.cmd)
			return f, err
		}
	}
	n.cfg.Logger.Error("cluster: dropping a malformed payment", "partition", c.Partition, "offset", c.Offset, "err", err)
	return f, nil
}
