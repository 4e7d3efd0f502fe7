package calls

import (
	"bytes"
	"context"
	"errors"
	"math"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// The first byte of a command names its workload.
const (
	WorkloadLedger  byte = 'l'
	WorkloadKV      byte = 'k'
	WorkloadTickets byte = 't'
	// WorkloadPayment marks the debit of a payment, a ledger transfer whose
	// outcome goes on to the reservation's partition instead of a reply.
	WorkloadPayment byte = 'p'
)

// Timeout bounds a request's wait for its partition's owner: longer
// than a node's death takes to be noticed and its partitions restored
// (docs/CLUSTER.md), so that a request to a dead owner's partition is
// answered by the next owner.
const Timeout = 30 * time.Second

// ErrUnavailable reports a command its partition's owner did not answer in
// time: the client may retry.
var ErrUnavailable = errors.New("cluster: partition unavailable")

// ReplyAddress parses a command's key, "<inbox>:<request id>". The
// request id aliases key: it is parsed for every command a round applies,
// replies to or settles, so it copies nothing.
func ReplyAddress(key []byte) (int32, []byte, bool) {
	i := bytes.IndexByte(key, ':')
	if i <= 0 || i > 10 {
		return 0, nil, false
	}
	var p int64
	for _, c := range key[:i] {
		if c < '0' || c > '9' {
			return 0, nil, false
		}
		p = p*10 + int64(c-'0')
	}
	if p > math.MaxInt32 {
		return 0, nil, false
	}
	return int32(p), key[i+1:], true
}

// ErrOverloaded fails a call whose command its partition's owner refused,
// not applied, because the partition owes another too many forwards
// (kafkalog.ErrOwesTooMuch): the client retries later.
var ErrOverloaded = errors.New("cluster: the partition owes another too many forwards; retry later")

// Reply is the output carrying value, the reply to request rid, to inbox.
// A reply is never empty (every workload's outcome begins with its
// operation's byte): an empty one is a Refusal.
func Reply(inbox int32, rid, value []byte) kafkalog.Output {
	return kafkalog.Output{Kind: kafkalog.Reply, Partition: inbox, Key: rid, Value: value}
}

// Refusal is the output answering request rid, at inbox, as refused
// (ErrOverloaded): an empty reply, so that it goes the ways replies go,
// back to the node's own call, over the peer link the request came on or
// packed to the replies topic, and its call fails at once rather than
// wait out its Timeout.
func Refusal(inbox int32, rid []byte) kafkalog.Output { return Reply(inbox, rid, nil) }

// Append appends value, a command no one waits for, to partition.
func (k *Caller) Append(ctx context.Context, partition int32, value []byte) error {
	_, err := k.prod.Append(ctx, partition, nil, value)
	return err
}
