package kafkalog

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readRange gives fn every record of topic/partition from offset from up
// to end, transaction markers included: with committed, without aborted
// records (read_committed); else aborted records included
// (read_uncommitted).
func readRange(ctx context.Context, c Config, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) error, opts []kgo.Opt) error {
	if end <= from {
		return nil
	}
	isolation := kgo.ReadUncommitted()
	if committed {
		isolation = kgo.ReadCommitted()
	}
	base := append(c.Seeds(),
		kgo.FetchIsolationLevel(isolation),
		// Transaction markers come through too: the last offset before the
		// end may be a marker, and seeing it ends the read.
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {partition: kgo.NewOffset().At(from)},
		}),
	)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return fmt.Errorf("kafkalog: reading %s/%d: %w", topic, partition, err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetches.Err(); err != nil {
			return fmt.Errorf("kafkalog: reading %s/%d: %w", topic, partition, err)
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset >= end {
				return nil
			}
			if err := fn(r); err != nil {
				return err
			}
			if r.Offset == end-1 {
				return nil
			}
		}
	}
}

// endOffset is the partition's high watermark as of the call, once the
// partition's last stable offset reaches that mark: every transaction
// that wrote below it has ended (committed, aborted, or aborted by the
// coordinator once its producer was fenced or timed out), so a
// read_committed reader sees all that was committed there.
// Rounds write no transaction, but a changelog of a cluster whose rounds
// were transactions (the upgrade) may hold one a node of older surge left
// open when it died, which the coordinator aborts once it times out.
func endOffset(ctx context.Context, c Config, topic string, partition int32, opts []kgo.Opt) (int64, error) {
	cl, err := kgo.NewClient(append(c.Seeds(), opts...)...)
	if err != nil {
		return 0, fmt.Errorf("kafkalog: end of %s: %w", topic, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hw, err := listOffset(ctx, adm.ListEndOffsets, topic, partition)
	if err != nil {
		return 0, err
	}
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, lsoPoll) {
		lso, err := listOffset(ctx, adm.ListCommittedOffsets, topic, partition)
		if err != nil || lso >= hw {
			return hw, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("kafkalog: waiting for the transactions of %s/%d to end: %w", topic, partition, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// lsoPoll bounds the wait between two looks at a partition's last stable
// offset. A new owner waits there for a dead transactional owner's
// transaction to be aborted (endOffset); a look costs one request to the
// leader, and a shorter wait serves the partitions sooner after the abort.
const lsoPoll = 100 * time.Millisecond

// listOffset asks list (kadm's ListEndOffsets or ListCommittedOffsets) for
// one partition's offset.
func listOffset(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string, partition int32) (int64, error) {
	offsets, err := list(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("kafkalog: end of %s: %w", topic, err)
	}
	o, ok := offsets.Lookup(topic, partition)
	if !ok {
		return 0, fmt.Errorf("kafkalog: end of %s/%d: no such partition", topic, partition)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("kafkalog: end of %s/%d: %w", topic, partition, o.Err)
	}
	return o.Offset, nil
}
