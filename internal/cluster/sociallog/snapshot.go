package sociallog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// The log's records are ops whose effects depend on every earlier one (a
// message's number, a username taken), so compacting C.social by key
// would lose state. Instead a node snapshots its copy of the state into a
// topic of its own, C.social.snapshot, and the social log is cut below an
// older snapshot: a node without a copy loads the newest snapshot and
// reads only the records after it (docs/CLUSTER.md, "Snapshots of the
// social log").
//
// A snapshot of the state after the records below offset X is taken by
// the node that proposed record X-1, where X is a multiple of
// Snapshots.Every: every node sees the same offsets, and only the
// proposer knows the record is its own, so one node takes it without any
// election, and none if that node dies first (the next multiple will
// do). In the snapshot topic a snapshot is its chunks, records of key
// "c" holding key-value pairs of the state, then its trailer, of key
// "t", saying where the chunks start and which offset X they stand for.
// Once a trailer is written, its writer deletes the social log's records
// below the previous snapshot's X and the snapshot topic's below the
// previous snapshot's first chunk: the log keeps the records of two
// snapshot intervals, so a node that lags by less than one interval never
// meets a cut.

// SnapshotTopic is the topic of the social log's snapshots of cluster c.
func SnapshotTopic(c kafkalog.Config) string { return Topic(c) + ".snapshot" }

// State is the node's copy of the state the log's records make, as the
// log snapshots and restores it.
type State interface {
	// Snapshot returns a consistent view of the copy as the records
	// applied so far left it. The log calls it between two applies.
	Snapshot() (Pairs, error)
	// Restore replaces the copy with the pairs that each passes to put,
	// the state after the records below the snapshot's offset, whose
	// last applied offset the pairs carry.
	Restore(each func(put func(key, value []byte) error) error) error
}

// Pairs is a consistent view of a State's key-value pairs.
type Pairs interface {
	// Each calls fn for each pair, in key order; the slices are valid
	// only during the call.
	Each(fn func(key, value []byte) error) error
	Close() error
}

// Snapshots configures a log's snapshots; the zero value takes none.
type Snapshots struct {
	State State
	// Every is how many records apart the snapshots are taken.
	Every int64
}

// DefaultSnapshotEvery is the records between two snapshots of the
// social log.
const DefaultSnapshotEvery = 100_000

// chunkBytes bounds a chunk's pairs, below the broker's default record
// size; chunksInFlight is how many chunks a writer produces at once.
const (
	chunkBytes     = 512 << 10
	chunksInFlight = 8
)

// Record keys and headers of the snapshot topic.
const (
	keyChunk   = "c"
	keyTrailer = "t"
	headerID   = "id"
	// headerPrev is the offset of the newest trailer the writer knew when
	// it began, -1 if none: from a chunk left by a writer that died, the
	// newest complete snapshot is one read away.
	headerPrev = "prev"
)

// trailer ends a snapshot in the snapshot topic.
type trailer struct {
	ID string `json:"id"`
	// Offset is the social log's offset the snapshot stands at: it holds
	// the records below it.
	Offset int64 `json:"offset"`
	// First is the snapshot topic's offset of its first chunk; Chunks and
	// Pairs its count of chunks and pairs.
	First  int64 `json:"first"`
	Chunks int64 `json:"chunks"`
	Pairs  int64 `json:"pairs"`
	// at is the trailer's own offset in the snapshot topic.
	at int64
}

// Stats counts what a node read to build its copy of the state.
type Stats struct {
	// SnapshotRecords is the snapshot topic's records read on start.
	SnapshotRecords int64
	// LogRecords is the social log's records applied.
	LogRecords int64
	// SnapshotsWritten counts the snapshots this node wrote, each counted
	// once the logs are cut below the previous one.
	SnapshotsWritten int64
}

// Stats returns what the node has read and written so far.
func (l *Log) Stats() Stats {
	return Stats{SnapshotRecords: l.snapRead.Load(), LogRecords: l.logRead.Load(), SnapshotsWritten: l.snapWritten.Load()}
}

// Restore brings a node's copy, which applied the log up to applied (-1:
// an empty copy), to the newest snapshot if the copy is empty or the log
// no longer holds the records after it, and returns the offset the copy
// then applied up to. Call it before Run.
func (l *Log) Restore(ctx context.Context, c kafkalog.Config, applied int64, opts ...kgo.Opt) (int64, error) {
	if l.snaps.State == nil {
		return applied, nil
	}
	start, err := l.startOf(ctx, l.topic)
	if err != nil {
		return applied, err
	}
	if applied >= 0 && applied+1 >= start {
		return applied, nil // the tail after the copy is in the log
	}
	t, err := l.newestTrailer(ctx, c, opts...)
	switch {
	case err != nil:
		return applied, err
	case t == nil || t.Offset <= applied+1:
		if applied+1 < start {
			return applied, fmt.Errorf("sociallog: %s starts at %d, past the node's copy (%d), and no snapshot covers it", l.topic, start, applied+1)
		}
		return applied, nil
	case t.Offset < start:
		return applied, fmt.Errorf("sociallog: the newest snapshot stands at %d, below %s's start %d: start the node again", t.Offset, l.topic, start)
	}
	began := time.Now()
	if err := l.load(ctx, c, t, opts...); err != nil {
		return applied, err
	}
	l.log.Info("cluster: the social state restored from a snapshot", "offset", t.Offset, "pairs", t.Pairs,
		"records", l.snapRead.Load(), "elapsed", time.Since(began).Round(time.Millisecond))
	return t.Offset - 1, nil
}

// load replaces the node's copy with snapshot t.
func (l *Log) load(ctx context.Context, c kafkalog.Config, t *trailer, opts ...kgo.Opt) error {
	var chunks, pairs int64
	err := l.snaps.State.Restore(func(put func(key, value []byte) error) error {
		return l.scan(ctx, c, t.First, t.at, opts, func(r *kgo.Record) error {
			if string(r.Key) != keyChunk || header(r, headerID) != t.ID {
				return nil
			}
			chunks++
			n, err := decodePairs(r.Value, put)
			pairs += n
			return err
		})
	})
	if err == nil && (chunks != t.Chunks || pairs != t.Pairs) {
		err = fmt.Errorf("sociallog: snapshot %s: %d chunks and %d pairs read, %d and %d written", t.ID, chunks, pairs, t.Chunks, t.Pairs)
	}
	return err
}

// newestTrailer finds the newest complete snapshot, nil if none: the
// topic's last record if it is a trailer, else (a chunk of a snapshot
// under way or abandoned) the trailer it names, else the last trailer of
// the whole topic.
func (l *Log) newestTrailer(ctx context.Context, c kafkalog.Config, opts ...kgo.Opt) (*trailer, error) {
	start, err := l.startOf(ctx, l.snapTopic)
	if err != nil {
		return nil, err
	}
	end, err := l.endOf(ctx, l.snapTopic)
	if err != nil || end <= start {
		return nil, err
	}
	var newest *trailer
	keep := func(r *kgo.Record) error {
		if string(r.Key) != keyTrailer {
			return nil
		}
		t := &trailer{at: r.Offset}
		if err := json.Unmarshal(r.Value, t); err != nil {
			return fmt.Errorf("sociallog: snapshot trailer at %d: %w", r.Offset, err)
		}
		newest = t
		return nil
	}
	var prev int64 = -1
	err = l.scan(ctx, c, end-1, end, opts, func(r *kgo.Record) error {
		prev, _ = strconv.ParseInt(header(r, headerPrev), 10, 64)
		return keep(r)
	})
	if err == nil && newest == nil && prev >= start {
		err = l.scan(ctx, c, prev, prev+1, opts, keep)
	}
	if err == nil && newest == nil {
		err = l.scan(ctx, c, start, end, opts, keep)
	}
	return newest, err
}

// scan calls fn for each record of the snapshot topic in [from, to).
func (l *Log) scan(ctx context.Context, c kafkalog.Config, from, to int64, opts []kgo.Opt, fn func(*kgo.Record) error) error {
	if from >= to {
		return nil
	}
	cl, err := kgo.NewClient(append(append(c.Seeds(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.snapTopic: {0: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(50*time.Millisecond),
	), opts...)...)
	if err != nil {
		return fmt.Errorf("sociallog: %w", err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			return fmt.Errorf("sociallog: reading %s: %w", l.snapTopic, err)
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset >= to {
				return nil
			}
			l.snapRead.Add(1)
			if err := fn(r); err != nil {
				return err
			}
			if r.Offset == to-1 {
				return nil
			}
		}
	}
}

// maybeSnapshot starts a snapshot at r's next offset if this node
// proposed r and that offset is a multiple of Every, and no snapshot of
// this node is under way. It runs between two applies.
func (l *Log) maybeSnapshot(r *kgo.Record) {
	at := r.Offset + 1
	if l.snaps.State == nil || l.snaps.Every <= 0 || at%l.snaps.Every != 0 || !bytes.HasPrefix(r.Key, []byte(l.prefix)) {
		return
	}
	if !l.writing.CompareAndSwap(false, true) {
		return
	}
	pairs, err := l.snaps.State.Snapshot()
	if err != nil {
		l.writing.Store(false)
		l.log.Warn("cluster: snapshotting the social state", "offset", at, "err", err)
		return
	}
	l.writers.Add(1)
	go func() {
		defer l.writers.Done()
		defer l.writing.Store(false)
		defer pairs.Close()
		if err := l.writeSnapshot(pairs, at); err != nil {
			l.log.Warn("cluster: writing a snapshot of the social state", "offset", at, "err", err)
		}
	}()
}

// snapshotTimeout bounds the writing of one snapshot.
const snapshotTimeout = 5 * time.Minute

// writeSnapshot writes pairs as the snapshot at offset, unless a snapshot
// at offset or later is there, then cuts the logs below the previous one.
func (l *Log) writeSnapshot(pairs Pairs, offset int64) error {
	ctx, cancel := context.WithTimeout(l.bg, snapshotTimeout)
	defer cancel()
	prev, err := l.newestTrailer(ctx, l.cfg, l.opts...)
	if err != nil || prev != nil && prev.Offset >= offset {
		return err
	}
	prevAt := int64(-1)
	if prev != nil {
		prevAt = prev.at
	}
	w := chunkWriter{l: l, ctx: ctx, headers: []kgo.RecordHeader{
		{Key: headerID, Value: []byte(newID())}, {Key: headerPrev, Value: []byte(strconv.FormatInt(prevAt, 10))},
	}, first: -1}
	if err := pairs.Each(w.add); err != nil {
		return err
	}
	if err := w.flush(true); err != nil {
		return err
	}
	if now, err := l.newestTrailer(ctx, l.cfg, l.opts...); err != nil || now != nil && now.Offset >= offset {
		return err // another node's newer snapshot came first
	}
	t := trailer{ID: string(w.headers[0].Value), Offset: offset, First: w.first, Chunks: w.chunks, Pairs: w.pairs}
	v, _ := json.Marshal(t) // a struct of strings and integers
	r := &kgo.Record{Topic: l.snapTopic, Partition: 0, Key: []byte(keyTrailer), Value: v, Headers: w.headers}
	if err := l.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("sociallog: writing a snapshot's trailer: %w", err)
	}
	l.log.Info("cluster: wrote a snapshot of the social state", "offset", offset, "pairs", w.pairs, "chunks", w.chunks)
	if prev != nil {
		err = l.cut(ctx, prev)
	}
	l.snapWritten.Add(1)
	return err
}

// cut deletes the social log's records below prev's offset, and the
// snapshot topic's below prev's first chunk.
func (l *Log) cut(ctx context.Context, prev *trailer) error {
	var o kadm.Offsets
	o.AddOffset(l.topic, 0, prev.Offset, -1)
	o.AddOffset(l.snapTopic, 0, prev.First, -1)
	resp, err := kadm.NewClient(l.prod).DeleteRecords(ctx, o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("sociallog: deleting the records below the previous snapshot: %w", err)
	}
	l.log.Info("cluster: cut the social log below the previous snapshot", "offset", prev.Offset)
	return nil
}

// chunkWriter produces a snapshot's pairs as chunks.
type chunkWriter struct {
	l       *Log
	ctx     context.Context
	headers []kgo.RecordHeader
	buf     []byte
	pending []*kgo.Record
	first   int64
	chunks  int64
	pairs   int64
}

func (w *chunkWriter) add(key, value []byte) error {
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)))
	w.buf = append(w.buf, key...)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, value...)
	w.pairs++
	if len(w.buf) < chunkBytes {
		return nil
	}
	return w.flush(false)
}

// flush makes the pairs so far a chunk, and produces the chunks held once
// chunksInFlight are, or all of them if last.
func (w *chunkWriter) flush(last bool) error {
	if len(w.buf) > 0 {
		w.pending = append(w.pending, &kgo.Record{Topic: w.l.snapTopic, Partition: 0, Key: []byte(keyChunk), Value: w.buf, Headers: w.headers})
		w.buf = nil
	}
	if len(w.pending) < chunksInFlight && !last || len(w.pending) == 0 {
		return nil
	}
	res := w.l.prod.ProduceSync(w.ctx, w.pending...)
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("sociallog: writing a snapshot's chunks: %w", err)
	}
	if w.first < 0 {
		w.first = res[0].Record.Offset
	}
	w.chunks += int64(len(w.pending))
	w.pending = w.pending[:0]
	return nil
}

// decodePairs passes each pair of a chunk to put and returns their count.
func decodePairs(b []byte, put func(key, value []byte) error) (int64, error) {
	var n int64
	for len(b) > 0 {
		key, rest, err := field(b)
		if err != nil {
			return n, err
		}
		value, rest, err := field(rest)
		if err != nil {
			return n, err
		}
		if err := put(key, value); err != nil {
			return n, err
		}
		n, b = n+1, rest
	}
	return n, nil
}

var errBadChunk = errors.New("sociallog: a snapshot chunk is cut short")

// field splits a length-prefixed field off b.
func field(b []byte) (f, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, errBadChunk
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func newID() string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// startOf and endOf are a topic's start and end offsets (partition 0).
func (l *Log) startOf(ctx context.Context, topic string) (int64, error) {
	o, err := kadm.NewClient(l.prod).ListStartOffsets(ctx, topic)
	return listed(o, err, topic)
}

func (l *Log) endOf(ctx context.Context, topic string) (int64, error) {
	o, err := kadm.NewClient(l.prod).ListEndOffsets(ctx, topic)
	return listed(o, err, topic)
}

func listed(o kadm.ListedOffsets, err error, topic string) (int64, error) {
	if err == nil {
		err = o.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("sociallog: offsets of %s: %w", topic, err)
	}
	lo, ok := o.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("sociallog: offsets of %s: no answer for its partition", topic)
	}
	return lo.Offset, nil
}
