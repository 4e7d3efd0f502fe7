package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A round's replies go out once its partition's write counts: to the
// node's own callers directly, to a peer that sent the request over a
// link still up through the link, and the others packed per inbox
// (calls.PackReplies) to the replies topic, produced with no
// transaction: the write that counted is what makes them true, and a
// reply lost on its way leaves its call to time out, which the client
// retries (with its idempotency id where the operation has one).

// replySender produces replies to the replies topic.
type replySender struct {
	cl  *kgo.Client
	log *slog.Logger
}

// newReplySender connects a reply sender to cluster c.
func newReplySender(c kafkalog.Config, log *slog.Logger) (*replySender, error) {
	cl, err := kgo.NewClient(append(c.SeedsFor("replies"),
		kgo.DefaultProduceTopic(c.RepliesTopic()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(kafkalog.MaxRecordBytes),
		kgo.ProducerLinger(0),
	)...)
	if err != nil {
		return nil, fmt.Errorf("node: replies: %w", err)
	}
	return &replySender{cl: cl, log: log}, nil
}

// send produces the packed replies in outs, in the background.
func (s *replySender) send(outs []kafkalog.Output) {
	for _, o := range outs {
		if o.Kind != kafkalog.Reply {
			continue
		}
		s.cl.Produce(context.Background(), &kgo.Record{Partition: o.Partition, Value: o.Value}, s.failed)
	}
}

// failed logs a reply that was not produced: its call times out.
func (s *replySender) failed(r *kgo.Record, err error) {
	if err != nil {
		s.log.Debug("cluster: producing replies", "inbox", r.Partition, "err", err)
	}
}

// close sends what is buffered, for a while, and disconnects.
func (s *replySender) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.cl.Flush(ctx)
	s.cl.Close()
}

// deliver sends the replies a counted partition's commands owe.
func (n *Node) deliver(sends []kafkalog.Output) {
	packed, held := calls.PackReplies(sends, n.holds)
	for _, o := range held {
		if n.caller.Mine(o.Key) || !n.peers.Reply(o.Key, o.Value) {
			n.caller.Deliver(o.Key, o.Value)
		}
	}
	n.replies.send(packed)
}
