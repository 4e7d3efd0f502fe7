// Package kafkalog is a surge shard's command log on Apache Kafka, through
// franz-go: the cluster's topics, the producer that appends commands to a
// partition, and the consumer-group member that owns partitions and runs
// rounds over them, each one idempotent acks=all write per partition,
// fenced by the changelog's order rather than by a Kafka transaction.
//
// A surge cluster named C (Config.Cluster) has three topics of N partitions
// each (Config.Partitions); partition p of the commands and changelog topics
// belongs to shard p:
//
//   - C.commands: the shards' input. A node that receives a request appends
//     the command to its shard's partition (acks=all, idempotent), as do
//     the forwards one partition owes another.
//   - C.changelog: compacted; the latest value of each key of a shard's
//     state, the owners' epoch records and the rounds' trailers. A new
//     owner restores a partition from it (RestoreChain, Owner.Take).
//   - C.replies: replies, to the partition that is the inbox of the node
//     holding the client's connection (InboxPartition).
//
// The members of the consumer group C share the commands partitions. A
// round (ChainMember.RoundWait) reads a batch of its partitions' commands,
// applies them, and writes per partition its changes, the forwards it owes
// and a trailer holding its position in the commands (Owner.Round, Writer):
// a write counts only under the epoch of the partition's last claim that
// took it (Chain), so a round's effects count once, whoever wrote after.
// docs/CLUSTER.md, "Rounds without a transaction", describes the design.
package kafkalog

import (
	"errors"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultCluster names the topics and consumer group when Config.Cluster is empty.
const DefaultCluster = "surge"

// Config locates a surge cluster on a Kafka cluster.
type Config struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// Cluster names the topics and the consumer group; DefaultCluster if empty.
	Cluster string
	// Partitions is the number of partitions (shards) of every topic: used
	// when the topics are created and checked against them afterwards.
	Partitions int32
	// ReplicationFactor of the topics when they are created; the brokers'
	// default.replication.factor if zero.
	ReplicationFactor int16
	// SessionTimeout is how long a node that stopped heartbeating (dead,
	// frozen, cut off) keeps its partitions before the group gives them to
	// the others; Kafka's default, 45 s, if zero. The brokers refuse values
	// below their group.min.session.timeout.ms (6 s by default).
	SessionTimeout time.Duration
	// Dial are the options every client of the node connects to the
	// brokers with beyond their addresses: TLS and SASL
	// (Security.Options); none for PLAINTEXT.
	Dial []kgo.Opt
	// Meter, if set, counts the requests of the node's clients.
	Meter *Meter
	// ForwardLimits bound what a partition of a ChainMember owes one
	// destination: past them the member's rounds refuse the partition's
	// commands (ChainRound.Refused). The zero value takes the defaults
	// (DefaultMaxOwed, DefaultMaxOwedBytes).
	ForwardLimits Limits
}

// Seeds are the options that reach the brokers: their addresses and
// Dial, the wait between metadata refreshes (metadataMinAge), and the
// Meter's hook, which counts the client's requests as "other". Each call
// returns a new slice, to append a client's own options to.
func (c Config) Seeds() []kgo.Opt { return c.SeedsFor("other") }

// SeedsFor is Seeds for a client the Meter names client.
func (c Config) SeedsFor(client string) []kgo.Opt {
	opts := append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.MetadataMinAge(metadataMinAge)}, c.Dial...)
	if c.Meter != nil {
		opts = append(opts, kgo.WithHooks(c.Meter.hook(client)))
	}
	return opts
}

// metadataMinAge is the least time between two of a client's metadata
// refreshes, which a request failing on a partition's leader asks for.
// After a broker's death the client learns its partitions' new leaders
// only at such a refresh: at franz-go's default, 5 s, a round that began
// just before the leaders moved still writes to the dead broker until its
// RoundTimeout (node.Config) ends, and a new owner's restore and offset fetch wait as
// long. A refresh is one small request, asked only while requests fail.
const metadataMinAge = 500 * time.Millisecond

func (c Config) name() string {
	if c.Cluster == "" {
		return DefaultCluster
	}
	return c.Cluster
}

// CommandsTopic is the topic of the shards' commands.
func (c Config) CommandsTopic() string { return c.name() + ".commands" }

// ChangelogTopic is the compacted topic of the shards' state.
func (c Config) ChangelogTopic() string { return c.name() + ".changelog" }

// RepliesTopic is the topic of the nodes' reply inboxes.
func (c Config) RepliesTopic() string { return c.name() + ".replies" }

// Group is the consumer group whose members own the commands partitions.
func (c Config) Group() string { return c.name() }

// InboxPartition is the partition of the replies topic that node reads.
func (c Config) InboxPartition(node string) int32 {
	return int32(xxhash.Sum64String(node) % uint64(c.Partitions))
}

func (c Config) validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("kafkalog: no brokers")
	case c.Partitions < 1:
		return fmt.Errorf("kafkalog: partitions must be at least 1, got %d", c.Partitions)
	}
	return nil
}
