package kafkalog

import "context"

// Command is one command read from a partition of the commands topic.
type Command struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

// Kind says what an Output is.
type Kind uint8

// The kinds of a round's outputs.
const (
	// Reply goes to the node that holds the client's connection, to the
	// partition of the replies topic that is its inbox (Output.Partition):
	// the round hands it back to its caller (PartitionRound.Send).
	Reply Kind = iota
	// Change goes to the changelog topic, to the shard's own partition.
	Change
	// Forward is a command owed to another partition, such as the credit
	// of a cross-partition transfer: the source partition's book owes it
	// (Book), and the member's Forwarder sends it.
	Forward
)

// Output is one record a round produces.
type Output struct {
	Kind Kind
	// Partition is a Change's commands partition, whose changelog
	// partition it goes to; a Reply's inbox, the replies topic's
	// partition of the node that waits for it; a Forward's destination.
	Partition int32
	Key       []byte
	Value     []byte
	// From is, for a Reply or a Forward, the commands partition whose
	// round owes it: it goes out only once that partition's write
	// counts.
	From int32
}

// Apply is a round's transform: it applies a batch of commands, in each
// partition's order, and returns the round's outputs. An error gives the
// round's partitions up (ChainMember.RoundWait).
type Apply func(ctx context.Context, batch []Command) ([]Output, error)

// Local hands a member's rounds the commands its node takes itself: those
// for partitions the member writes, which the node gives its own rounds
// instead of appending them to the commands topic. A round takes them
// beside the commands it polls, and applies and writes them the same way,
// with no offset of their own (ChainMember.Takes).
type Local interface {
	// Waiting receives when commands may wait to be taken.
	Waiting() <-chan struct{}
	// Take returns up to max of the waiting commands, in order.
	Take(max int) []Command
}
