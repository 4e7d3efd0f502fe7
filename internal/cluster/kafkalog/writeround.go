package kafkalog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Write writes a round's batches, at most one per partition, in one
// produce request per broker, and returns what became of each, in order.
// It refuses the whole round, sending nothing, with ErrRoundTooLarge, or
// ErrNotClaimed if some partition is not the writer's. An error of the
// request itself is each batch's Err, as is ctx's end for a batch not
// acknowledged by then: a write waits for its own records only.
func (w *Writer) Write(ctx context.Context, batches []Batch) ([]Written, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent, err := w.records(batches)
	if err != nil {
		return nil, err
	}
	var all []*kgo.Record
	for _, rs := range sent {
		all = append(all, rs...)
	}
	failed := w.send(ctx, all)
	out := make([]Written, len(batches))
	for i, b := range batches {
		out[i] = w.landed(b.Partition, sent[i], failed)
		if out[i].Err == nil {
			w.judge(ctx, &out[i])
		}
		if !out[i].Valid {
			delete(w.owned, b.Partition)
		}
	}
	return out, nil
}

// records checks a round's batches and builds each one's records.
func (w *Writer) records(batches []Batch) ([][]*kgo.Record, error) {
	sent := make([][]*kgo.Record, len(batches))
	seen := make(map[int32]bool, len(batches))
	total := 0
	for i, b := range batches {
		o, ok := w.owned[b.Partition]
		if !ok || seen[b.Partition] {
			return nil, fmt.Errorf("%w: %s/%d, or twice in a round", ErrNotClaimed, w.topic, b.Partition)
		}
		seen[b.Partition] = true
		sent[i] = w.batchRecords(o.epoch, b)
		total += len(sent[i])
		if size := batchBound(sent[i]); size > MaxRecordBytes || total > writerMaxRecords {
			return nil, fmt.Errorf("%w: %s/%d, %d bytes at most, %d records in the round",
				ErrRoundTooLarge, w.topic, b.Partition, size, total)
		}
	}
	return sent, nil
}

// batchRecords is b as records: its changes, then its trailer.
func (w *Writer) batchRecords(e Epoch, b Batch) []*kgo.Record {
	rs := make([]*kgo.Record, 0, len(b.Updates)+1)
	for _, u := range b.Updates {
		rs = append(rs, ChangeRecord(w.topic, b.Partition, e, u.Key, u.Value))
	}
	t := Trailer{Epoch: e, Commands: b.Commands}
	if b.Book != nil {
		t.Book = *b.Book
	}
	return append(rs, TrailerRecord(w.topic, b.Partition, t))
}

// landed says where a partition's records landed, or why that is unknown.
func (w *Writer) landed(partition int32, rs []*kgo.Record, failed map[*kgo.Record]error) Written {
	out := Written{Partition: partition, Base: -1, End: -1}
	for _, r := range rs {
		if err := failed[r]; err != nil {
			out.Err = fmt.Errorf("kafkalog: writing %s/%d: %w", w.topic, partition, err)
			return out
		}
	}
	out.Base, out.End = rs[0].Offset, rs[len(rs)-1].Offset+1
	if out.End-out.Base != int64(len(rs)) {
		out.Err = fmt.Errorf("%w: %s/%d, %d records from %d to %d", ErrSplitBatch, w.topic, partition, len(rs), out.Base, out.End)
	}
	return out
}

// judge decides whether a batch that landed counts: it does if it follows
// the writer's previous record there, or if the records between take the
// partition from no other owner (judgeGap).
func (w *Writer) judge(ctx context.Context, out *Written) {
	o := w.owned[out.Partition]
	out.Foreign = out.Base
	if out.Base != o.end {
		gap, err := w.readGap(ctx, out.Partition, o.end, out.Base)
		if err != nil {
			out.Err = err
			return
		}
		fenced, keys, err := judgeGap(o, gap)
		if err != nil {
			out.Err = fmt.Errorf("kafkalog: %s/%d between %d and %d: %w", w.topic, out.Partition, o.end, out.Base, err)
			return
		}
		if fenced {
			return
		}
		out.Foreign, out.ForeignKeys = o.end, keys
	}
	out.Valid = true
	o.end = out.End
	w.owned[out.Partition] = o
}

// ErrOwnRecordInGap reports a record of the writer's own epoch between its
// previous write and its new one: a batch of its own that landed again
// (sent again under a new producer id), or one it does not know of. Its
// first copy may have counted, so the new write's outcome is unknown.
var ErrOwnRecordInGap = errors.New("kafkalog: a record of the writer's epoch precedes its write")

// ErrOwnClaimInGap reports a claim of the writer's own member and term
// that took the partition between its previous write and its new one: a
// claim of its own whose request outlived its context (the Writer's
// client replaced, the request already sent) landed after the writer's
// later claim of the same term. The group gave the partition to no one
// else, so the writer is not fenced, but its claim is no longer the one
// in force and the new write does not count: the owner takes the
// partition again (an unknown outcome, Owner.Round) rather than wait for
// a revoke that never comes.
var ErrOwnClaimInGap = errors.New("kafkalog: a late claim of the writer's own took the partition")

// judgeGap judges a write of the writer's claim own by gap, the records
// between the writer's previous record in the partition and the write's
// first, run through the replay rule from own. The write is fenced if
// another member's claim, or one of another term, in the gap takes the
// partition; it counts otherwise, and the changes in the gap are a
// zombie's, whose keys the owner writes again. Its outcome is unknown (an
// error) if a record of the gap does not decode, which could be a claim;
// if a change or trailer of the writer's own epoch comes before any claim
// that takes: the copy of a batch that may have counted; or if the claim
// that takes is of the writer's own member and term (ErrOwnClaimInGap).
func judgeGap(own claimed, gap []*kgo.Record) (fenced bool, keys [][]byte, err error) {
	chain := NewChain(own.epoch, own.term)
	changed := map[string]bool{}
	for _, r := range gap {
		if r.Attrs.IsControl() {
			continue
		}
		e, err := ReadEntry(r)
		if err != nil {
			return false, nil, fmt.Errorf("at %d: %w", r.Offset, err)
		}
		if e.Kind != KindEpoch && e.Epoch == own.epoch {
			return false, nil, fmt.Errorf("%w: at %d", ErrOwnRecordInGap, r.Offset)
		}
		chain.Counts(e)
		switch {
		case chain.Epoch() == own.epoch:
		case e.Claim.Member == own.member && e.Claim.Term() == own.term:
			return false, nil, fmt.Errorf("%w: at %d", ErrOwnClaimInGap, r.Offset)
		default:
			return true, nil, nil
		}
		if e.Kind == KindChange {
			changed[string(e.Key)] = true
		}
	}
	return false, sortedKeys(changed), nil
}

// readGap reads partition's records in [from, to).
func (w *Writer) readGap(ctx context.Context, partition int32, from, to int64) ([]*kgo.Record, error) {
	if to < from {
		return nil, fmt.Errorf("kafkalog: %s/%d: a write landed at %d, before the writer's end %d", w.topic, partition, to, from)
	}
	var gap []*kgo.Record
	err := readRange(ctx, w.cfg, w.topic, partition, from, to, false, func(r *kgo.Record) error {
		gap = append(gap, r)
		return nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: reading what preceded a write to %s/%d: %w", w.topic, partition, err)
	}
	return gap, nil
}

// batchOverhead bounds a record batch's header, whatever the produce
// request's version (61 bytes in Kafka's v2 format, more as franz-go
// counts a flexible request's).
const batchOverhead = 128

// batchBound is the most bytes rs take as one record batch: franz-go cuts
// a batch that would exceed ProducerBatchMaxBytes, so a round's batch
// within MaxRecordBytes by this bound is sent whole.
func batchBound(rs []*kgo.Record) int {
	n := batchOverhead
	for _, r := range rs {
		n += recordBound(r)
	}
	return n
}

// recordBound is the most bytes r takes in a record batch: its length,
// attributes, timestamp and offset deltas, key, value and headers, each
// length a varint.
func recordBound(r *kgo.Record) int {
	const lenField = binary.MaxVarintLen32
	n := lenField + 1 + binary.MaxVarintLen64 + lenField + lenField + len(r.Key) + lenField + len(r.Value) + lenField
	for _, h := range r.Headers {
		n += lenField + len(h.Key) + lenField + len(h.Value)
	}
	return n
}
