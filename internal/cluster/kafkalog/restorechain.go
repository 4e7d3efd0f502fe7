package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ChainState is where a replay of a changelog partition through a Chain
// stands: what a local copy of the partition keeps beside the state it
// holds, to read only the log's tail next time.
type ChainState struct {
	// Offset is the next offset to read: the copy holds the effect of
	// every change below it that counts.
	Offset int64
	// Epoch is the epoch in force at Offset.
	Epoch Epoch
	// Term is the term of Epoch's claim: a later claim of a lower one does
	// not take the partition (Chain).
	Term Term
	// Last is the last trailer that counts below Offset, nil if none: the
	// position in the commands topic and the bookkeeping of forwards, its
	// Book owing the forwards whose records count below Offset (a local
	// copy keeps them with the offset, as it keeps the shard's keys).
	Last *Trailer
}

// LogStart is the state of a replay at a changelog partition's start.
func LogStart() ChainState { return ChainState{Offset: 0, Epoch: NoEpoch} }

// Commands is the offset of the commands topic to read on from, -1 if no
// trailer counts: the changelog was written by transactional rounds only,
// whose position is the group's committed offset.
func (s ChainState) Commands() int64 {
	if s.Last == nil {
		return -1
	}
	return s.Last.Commands
}

// Book is the bookkeeping of forwards to go on with: a copy of the last
// trailer's, empty if none counts.
func (s ChainState) Book() Book {
	if s.Last == nil {
		return Book{}
	}
	return s.Last.Book.Clone()
}

// Restored is what RestoreChain read.
type Restored struct {
	// Snapshot is what a copy that took the changes counted covers.
	Snapshot Snapshot
	// State is the replay's state just after the owner's epoch record.
	State ChainState
	// Foreign are the keys whose last change read does not count, in
	// order: the owner writes their current value again before the log
	// cleaner could keep a foreign record and drop the one that counts.
	// Forward records' keys among them take their value from the book
	// (Owner).
	Foreign [][]byte
}

// ErrNotAnEpoch reports a restore asked to read up to an offset that holds
// no epoch record, or one that did not take the partition (a claim of a
// term below the one in force).
var ErrNotAnEpoch = errors.New("kafkalog: no epoch record at the owner's epoch")

// RestoreChain reads partition's changelog from where from stands up to the
// epoch record of owner, the epoch the reader claimed the partition with
// (Writer.Claim), and gives fn, in order, each change that counts (Chain):
// the later of two changes of a key is its current value. The forward
// records that count go to the book instead (ChainState.Last). Committed records
// only, so that the aborted rounds of a changelog written by transactions
// do not count either; a change without a kind header is such a round's,
// and counts before the partition's first epoch record.
func RestoreChain(ctx context.Context, c Config, partition int32, from ChainState, owner Epoch, fn func(key, value []byte) error, opts ...kgo.Opt) (Restored, error) {
	r, err := newChainReplay(c, partition, from, fn, opts)
	if err != nil {
		return Restored{}, err
	}
	if err := r.readTo(ctx, int64(owner)+1); err != nil {
		return Restored{}, err
	}
	if r.chain.Epoch() != owner {
		return Restored{}, fmt.Errorf("%w: %s/%d at %d", ErrNotAnEpoch, c.ChangelogTopic(), partition, owner)
	}
	return r.restored(ctx)
}

// newChainReplay starts a replay of partition where from stands.
func newChainReplay(c Config, partition int32, from ChainState, fn func(key, value []byte) error, opts []kgo.Opt) (*chainReplay, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	r := startReplay(from, fn)
	r.c, r.partition, r.opts = c, partition, opts
	return r, nil
}

// startReplay is a replay of records from where from stands, giving fn the
// changes that count.
func startReplay(from ChainState, fn func(key, value []byte) error) *chainReplay {
	r := &chainReplay{offset: from.Offset, chain: NewChain(from.Epoch, from.Term), last: from.Last, owed: owedRecords{}, foreign: map[string]bool{}, fn: fn}
	if from.Last != nil {
		r.owed = owedRecordsOf(&from.Last.Book)
	}
	return r
}

// readTo runs the partition's committed records up to end through the
// replay.
func (r *chainReplay) readTo(ctx context.Context, end int64) error {
	if end < r.offset {
		return fmt.Errorf("kafkalog: restoring %s/%d from offset %d, past %d", r.c.ChangelogTopic(), r.partition, r.offset, end)
	}
	if err := readRange(ctx, r.c, r.c.ChangelogTopic(), r.partition, r.offset, end, true, r.take, r.opts); err != nil {
		return err
	}
	r.offset = end
	return nil
}

// state is where the replay stands: the last trailer's book owes the
// forwards whose records count.
func (r *chainReplay) state() ChainState {
	st := ChainState{Offset: r.offset, Epoch: r.chain.Epoch(), Term: r.chain.Term()}
	if r.last != nil {
		last := *r.last
		last.Book = r.owed.book(&r.last.Book)
		st.Last = &last
	}
	return st
}

// restored is what the replay read, with the changelog's state for the
// Snapshot.
func (r *chainReplay) restored(ctx context.Context) (Restored, error) {
	st, err := describe(ctx, r.c, r.partition, r.opts)
	if err != nil {
		return Restored{}, err
	}
	return Restored{
		Snapshot: Snapshot{Topic: st.topic, Offset: r.offset, Epoch: st.epoch, Taken: time.Now()},
		State:    r.state(),
		Foreign:  sortedKeys(r.foreign),
	}, nil
}

// chainReplay runs a partition's records through a Chain for RestoreChain.
type chainReplay struct {
	c         Config
	partition int32
	opts      []kgo.Opt
	offset    int64 // the next offset to read
	chain     *Chain
	last      *Trailer
	owed      owedRecords     // the forward records that count
	foreign   map[string]bool // keys whose last change does not count
	fn        func(key, value []byte) error
}

// take runs the next record through the chain: a change that counts goes
// to fn, a forward record to the forwards owed, a trailer that counts
// becomes the last.
func (r *chainReplay) take(rec *kgo.Record) error {
	if rec.Attrs.IsControl() {
		return nil
	}
	e, err := ReadEntry(rec)
	if err != nil {
		return fmt.Errorf("kafkalog: %s/%d at %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	counts := r.chain.Counts(e)
	switch {
	case e.Kind == KindChange && counts:
		delete(r.foreign, string(e.Key))
		if id, ok := forwardOf(e.Key); ok {
			if err := r.owed.take(id, e.Value); err != nil {
				return fmt.Errorf("kafkalog: %s/%d at %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
			return nil
		}
		return r.fn(e.Key, e.Value)
	case e.Kind == KindChange:
		r.foreign[string(e.Key)] = true
	case e.Kind == KindTrailer && counts:
		r.last = &e.Trailer
	case e.Kind == KindEpoch && counts:
		if t := e.Claim.restated(e.Offset); t != nil {
			r.last = t
		}
	}
	return nil
}

// sortedKeys are a set's keys, sorted.
func sortedKeys(set map[string]bool) [][]byte {
	keys := slices.Sorted(maps.Keys(set))
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}
