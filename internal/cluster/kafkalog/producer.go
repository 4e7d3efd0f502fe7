package kafkalog

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer appends commands to the partitions of the commands topic. Its
// writes are acknowledged by all in-sync replicas (acks=all) and idempotent:
// a retried send is written once.
type Producer struct {
	cl    *kgo.Client
	topic string
}

// NewProducer connects a producer to the cluster c; opts are added last
// (tests use them for shorter timeouts).
func NewProducer(c Config, opts ...kgo.Opt) (*Producer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	base := append(c.Seeds(),
		kgo.DefaultProduceTopic(c.CommandsTopic()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: producer: %w", err)
	}
	return &Producer{cl: cl, topic: c.CommandsTopic()}, nil
}

// Append writes a command to partition p and returns its offset once it is
// durable on every in-sync replica.
func (p *Producer) Append(ctx context.Context, partition int32, key, value []byte) (int64, error) {
	r := &kgo.Record{Topic: p.topic, Partition: partition, Key: key, Value: value}
	if err := p.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return 0, fmt.Errorf("kafkalog: appending to %s/%d: %w", p.topic, partition, err)
	}
	return r.Offset, nil
}

// Close flushes nothing further and closes the connections.
func (p *Producer) Close() { p.cl.Close() }
