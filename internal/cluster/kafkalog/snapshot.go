package kafkalog

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/codec"
)

// Snapshot is what a node's local copy of one changelog partition covers:
// the copy holds the effect of every committed record of the partition
// below Offset, and nothing else. A node restores such a partition from its
// copy and the records from Offset on, once CheckSnapshot finds nothing to
// doubt: RestoreChain from the copy's Chain state. A copy without one is
// read from the log's start (changelog.ChainFrom).
type Snapshot struct {
	// Topic is the changelog topic's id: a topic deleted and created again
	// under the same name has another.
	Topic kadm.TopicID
	// Offset is the changelog offset the copy covers up to.
	Offset int64
	// Epoch is the partition's leader epoch when the copy last read the
	// changelog (-1 if unknown): the partition's log has not diverged
	// from what the copy read if that epoch's records reach Offset.
	Epoch int32
	// Taken is when the copy was last brought up to Offset.
	Taken time.Time
	// Chain is where a replay of the partition through a Chain stands at
	// Offset (its Offset is Offset), kept by a copy of rounds without a
	// transaction; nil for a copy of transactional rounds.
	Chain *ChainState
}

// AppendChainState appends s's epoch, its claim's term and its last
// trailer, not its offset, to b, with the forwards its book owes: what a
// local copy keeps beside its offset (ReadChainState). The term goes with
// the epoch, since a later claim of a lower term must not take the
// partition from a replay that goes on from the copy (Chain); a trailer
// keeps only the book's counters, and the tail read from the copy's
// offset may hold none of the forwards' records.
func AppendChainState(b []byte, s ChainState) []byte {
	e := codec.Encoder{B: b}
	e.Varint(int64(s.Epoch))
	e.Uvarint(uint64(s.Term.Era))
	e.Varint(int64(s.Term.Generation))
	e.Bool(s.Last != nil)
	if s.Last == nil {
		return e.B
	}
	e.String(string(TrailerRecord("", 0, *s.Last).Value))
	owed := s.Last.Book.Owed()
	e.Uvarint(uint64(len(owed)))
	for _, f := range owed {
		e.Uvarint(uint64(uint32(f.Partition)))
		e.Uvarint(f.Seq)
		e.String(string(forwardUpdate(f).Value))
	}
	return e.B
}

// ReadChainState reads, as the state at offset, what AppendChainState
// wrote in b.
func ReadChainState(offset int64, b []byte) (ChainState, error) {
	d := codec.Decoder{B: b}
	s := ChainState{Offset: offset, Epoch: Epoch(d.Varint())}
	s.Term.Era = uint32(d.Uvarint())
	s.Term.Generation = int32(d.Varint())
	if d.Bool() {
		last, err := readTrailer(d.Bytes())
		if err != nil {
			return ChainState{}, err
		}
		owed := owedRecords{}
		for n := d.Uvarint(); n > 0 && d.Err == nil; n-- {
			id := forwardID{to: int32(uint32(d.Uvarint())), seq: d.Uvarint()}
			if err := owed.take(id, bytes.Clone(d.Bytes())); err != nil {
				return ChainState{}, fmt.Errorf("%w: a copy's chain state", err)
			}
		}
		last.Book = owed.book(&last.Book)
		s.Last = &last
	}
	if err := d.Done(); err != nil {
		return ChainState{}, fmt.Errorf("%w: a copy's chain state", ErrBadRecord)
	}
	return s, nil
}

// changelogState is what a restore checks a partition's changelog against.
type changelogState struct {
	topic     kadm.TopicID
	start     int64 // the log's start offset
	end       int64 // its high watermark, every transaction below it ended
	epoch     int32 // the leader epoch at end
	retention time.Duration
}

// describe reads partition's changelog state, waiting for the transactions
// open in it to end (see endOffset).
func describe(ctx context.Context, c Config, partition int32, opts []kgo.Opt) (changelogState, error) {
	var st changelogState
	cl, err := kgo.NewClient(append(c.Seeds(), opts...)...)
	if err != nil {
		return st, fmt.Errorf("kafkalog: describing the changelog: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := c.ChangelogTopic()
	topics, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return st, fmt.Errorf("kafkalog: describing %s: %w", topic, err)
	}
	st.topic = topics[topic].ID
	if st.start, err = listOffset(ctx, adm.ListStartOffsets, topic, partition); err != nil {
		return st, err
	}
	if st.retention, err = deleteRetention(ctx, adm, topic); err != nil {
		return st, err
	}
	end, err := endOffset(ctx, c, topic, partition, opts)
	if err != nil {
		return st, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return st, fmt.Errorf("kafkalog: end of %s: %w", topic, err)
	}
	o, _ := ends.Lookup(topic, partition)
	st.end, st.epoch = end, o.LeaderEpoch
	return st, nil
}

// deleteRetention is the topic's delete.retention.ms: how long the log
// keeps a tombstone once compaction reached it.
func deleteRetention(ctx context.Context, adm *kadm.Client, topic string) (time.Duration, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("kafkalog: configs of %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return 0, fmt.Errorf("kafkalog: configs of %s: %w", topic, err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == "delete.retention.ms" && cfg.Value != nil {
			ms, err := strconv.ParseInt(*cfg.Value, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("kafkalog: %s's delete.retention.ms: %w", topic, err)
			}
			return time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, fmt.Errorf("kafkalog: %s has no delete.retention.ms", topic)
}

// CheckSnapshot tells whether a local copy of partition's changelog state
// described by snap can be brought up to date by reading the changelog
// from snap.Offset on. It returns why not (doubt), or "" if it can: the
// topic is the one the copy read; snap.Offset is within the log (not past
// its end, as after a topic's data was lost, nor below its start); the
// leader epoch the copy read still ends at or after snap.Offset (no
// unclean leader election cut and rewrote the log below it); and the copy
// is younger than half the topic's delete.retention.ms, so that no
// tombstone written after it has been compacted away (the half leaves
// room for clocks and for a round's duration).
func CheckSnapshot(ctx context.Context, c Config, partition int32, snap Snapshot, opts ...kgo.Opt) (doubt string, err error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	st, err := describe(ctx, c, partition, opts)
	if err != nil {
		return "", err
	}
	switch {
	case st.topic != snap.Topic:
		return "the changelog topic was created again", nil
	case snap.Offset > st.end:
		return fmt.Sprintf("the copy is at offset %d, past the changelog's end %d", snap.Offset, st.end), nil
	case snap.Offset < st.start:
		return fmt.Sprintf("the copy is at offset %d, below the changelog's start %d", snap.Offset, st.start), nil
	case time.Since(snap.Taken) >= st.retention/2:
		return fmt.Sprintf("the copy is %v old; tombstones are kept %v", time.Since(snap.Taken).Round(time.Second), st.retention), nil
	}
	if snap.Epoch < 0 {
		return "", nil
	}
	return epochDoubt(ctx, c, partition, snap, opts)
}

// epochDoubt asks the partition's leader where the copy's leader epoch
// ends: before snap.Offset, the log the copy read was cut and rewritten.
func epochDoubt(ctx context.Context, c Config, partition int32, snap Snapshot, opts []kgo.Opt) (string, error) {
	cl, err := kgo.NewClient(append(c.Seeds(), opts...)...)
	if err != nil {
		return "", fmt.Errorf("kafkalog: %w", err)
	}
	defer cl.Close()
	topic := c.ChangelogTopic()
	req := kadm.OffsetForLeaderEpochRequest{}
	req.Add(topic, partition, snap.Epoch)
	res, err := kadm.NewClient(cl).OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		return "", fmt.Errorf("kafkalog: epochs of %s/%d: %w", topic, partition, err)
	}
	o, ok := res[topic][partition]
	if !ok || o.Err != nil {
		return "", fmt.Errorf("kafkalog: epochs of %s/%d: %v", topic, partition, o.Err)
	}
	if o.EndOffset < snap.Offset {
		return fmt.Sprintf("leader epoch %d ends at %d, below the copy's offset %d", snap.Epoch, o.EndOffset, snap.Offset), nil
	}
	return "", nil
}
