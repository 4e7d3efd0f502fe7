package changelog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// A node keeps, besides the engine's cache, a local copy of the state of
// every changelog partition it owns or owned (--data/snapshot, a Pebble
// store of its own): each partition's records under 'd' and the partition
// (4 bytes, big-endian), and under 'm' and the partition what the copy
// covers (kafkalog.Snapshot: topic id, offset, leader epoch and time, in
// 36 bytes, big-endian, then the chain state: chain.go). A take of a
// partition brings its copy up to the changelog's end (RestoreChain),
// reading only the records after what the copy covers; a copy missing,
// without a chain state, or doubtful (kafkalog.CheckSnapshot) is read
// from the changelog's start, as a node with no copy does. A rebuild of
// the engine's cache loads the copies of the partitions the node writes
// (Load), and reads no changelog record.
//
// Exactly-once: the copy takes a round's changes of a partition only once
// the partition's write counted, in one local batch with the chain state
// the write reached (CommitChain), so it never holds state Kafka does
// not, and after a kill -9 it holds, per partition, a prefix of the
// counted writes with the state that prefix ends at. The engine's cache
// runs ahead of Kafka within a round; any write that does not count makes
// the node rebuild the cache from the copies, so its changes are gone.
//
// The counted rounds' batches are not committed one by one: they gather
// in one pending batch (Snapshots.pending), committed once it holds half
// the copy's memtable, which Pebble then applies as a flushable batch,
// sorted once, instead of inserting each record into the memtable's
// skiplist. The metas the pending rounds move stay in memory
// (Snapshots.pendingMeta) and are written once, the last of each
// partition, at the end of the pending batch when it is committed: a
// round moves every partition it writes, and its chain state owes
// forwards that would be encoded again each round. Everything that reads
// or replaces the copy (meta, Restate, Load, a take's restore, Close)
// commits the pending batch first, so it reads every counted round. The
// pending batch holds only writes that counted, its metas the state its
// last round ends at, so a kill -9 loses at most a suffix of the counted
// rounds whole: the copy is then an older consistent state, and a take
// reads the changelog on from it.
//
// No WAL: the copy keeps no write-ahead log (store.Options.NoWAL), since
// what makes a round durable is the changelog (acks=all). On disk it is
// what Pebble's flushes wrote, and a kill -9 loses the memtables with the
// pending batch. What remains is still a prefix of the copy's commits,
// each whole: Pebble applies a batch to one memtable whole, or queues a
// large one whole as a flushable batch; a flush writes the oldest
// memtables once their writers are done, syncs the table files and
// installs them in one MANIFEST edit; and every meta is written in the
// batch of the changes it covers (flushLocked; a restore's, in its last
// batch: ChainRestore.Done). So the copy still holds, per partition, a
// prefix of the counted writes with the state that prefix ends at. A
// clean Close flushes the memtables, so that a clean restart reads no
// changelog record.

const (
	snapData byte = 'd'
	snapMeta byte = 'm'
)

// Snapshots is the node's local copy of its partitions' changelogs.
type Snapshots struct {
	db     *store.Store
	cfg    kafkalog.Config
	logger *slog.Logger
	// read counts the changelog records restores have read.
	read atomic.Int64

	// wmu orders the copy's writes: the pending batch's commit before
	// any other batch's.
	wmu sync.Mutex
	// pending are the counted rounds' changes not yet committed (commit),
	// and pendingMeta the metas they move, which the next round's fill
	// reads and flushLocked writes at pending's end.
	pending     *pebble.Batch
	pendingMeta map[int32]kafkalog.Snapshot
	// commitAt is how many bytes pending holds before it is committed.
	commitAt int
	// lost is the error that dropped pending rounds: the copy misses
	// counted rounds, and no later round may move its metas past them.
	lost error

	mu sync.Mutex
	// restoring are the takes' restores under way (RestoreChain), which
	// Restate reads.
	restoring map[int32]*ChainRestore
}

// SnapshotOptions tune the local copy's store.
type SnapshotOptions struct {
	// FS is the file system under the copy (nil: the operating system's),
	// through which tests inject faults and crashes.
	FS vfs.FS
	// MemTableBytes is the copy's memtable size (0: the store's default,
	// 64 MiB). The copy keeps no WAL, so its memtables are what a kill -9
	// loses; the pending batch is committed at half of it (pendingBytes).
	MemTableBytes uint64
}

// OpenSnapshots opens the copy in dir/snapshot. A damaged copy (a table
// file failing its checksums, or a WAL of a copy kept with one, cut in
// its middle) is dropped: every partition is then read from the
// changelog. Other errors (another process holds the directory, a
// failing disk) are returned.
func OpenSnapshots(dir string, cfg kafkalog.Config, logger *slog.Logger, o SnapshotOptions) (*Snapshots, error) {
	path := filepath.Join(dir, "snapshot")
	opts := snapOptions
	opts.FS, opts.MemTableBytes = o.FS, o.MemTableBytes
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	db, err := openCopy(path, opts)
	var damage *store.WALDamage
	var tables *store.TableDamage
	if err != nil && !errors.As(err, &damage) && !errors.As(err, &tables) && !errors.Is(err, pebble.ErrCorruption) {
		return nil, err
	}
	if err != nil {
		logger.Warn("cluster: dropping the local snapshot", "err", err)
		if err := opts.FS.RemoveAll(path); err != nil {
			return nil, err
		}
		if db, err = store.Open(path, opts); err != nil {
			return nil, err
		}
	}
	commitAt := pendingBytes
	if o.MemTableBytes != 0 {
		commitAt = int(o.MemTableBytes / 2)
	}
	return &Snapshots{db: db, cfg: cfg, logger: logger, commitAt: commitAt,
		pendingMeta: map[int32]kafkalog.Snapshot{}, restoring: map[int32]*ChainRestore{}}, nil
}

// openCopy opens the copy's store and checks every block of its table
// files: Pebble checks a block only when a read needs it, and a copy read
// in part would restore partitions from damaged state, or fail the reads
// of a partition after its take had begun from the copy. The check reads
// what a restart's load of the copies (Load) reads again.
func openCopy(path string, opts store.Options) (*store.Store, error) {
	db, err := store.Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := db.VerifyTables(context.Background()); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// ErrLost is wrapped by the errors of a copy that dropped counted rounds
// it could not write (a failing disk): it misses writes that counted, and
// takes no more until the node restarts, when a take's restore reads the
// changelog from where the copy stands.
var ErrLost = errors.New("changelog: the local snapshot lost counted rounds")

// snapOptions are the copy's store's. It keeps no WAL (see "No WAL"
// above). Like the engine's cache, it leaves the files its flushes write
// uncompressed (store.Options.UncompressedL0), which compactions soon
// rewrite compressed. Its memtable, by default the store's, sets the
// pending batch's size (pendingBytes).
var snapOptions = store.Options{NoWAL: true, UncompressedL0: true}

// pendingBytes is the pending batch's size at which it is committed: half
// the store's default memtable, from which Pebble applies a batch as a
// flushable one (a batch's size in the memtable exceeds its Len), which
// it queues for a flush at once.
const pendingBytes = 32 << 20

// pendingRoom is what a pending batch is allocated beyond commitAt, for
// the round that passes it and the metas: a batch that grows copies what
// it holds into an array twice as large.
const pendingRoom = 1 << 20

// Close commits the pending rounds, writes the copy's memtables to disk
// (it keeps no WAL), and closes it: a clean restart restores from all of
// it.
func (s *Snapshots) Close() {
	err := s.flush()
	if err == nil {
		err = s.db.Flush()
	}
	if err != nil {
		s.logger.Warn("cluster: the local snapshot lost its last rounds", "err", err)
	}
	_ = s.db.Close()
}

// flush commits the pending rounds, if any.
func (s *Snapshots) flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushLocked()
}

// whole commits the pending rounds, and fails once the copy lost counted
// rounds: it then holds the state before them, which readers of what it
// covers may see (meta, Restate), but a load into the engine's cache,
// which takes a copy for current, may not.
func (s *Snapshots) whole() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.flushLocked(); err != nil {
		return err
	}
	return s.lost
}

// flushLocked commits the pending rounds, if any.
func (s *Snapshots) flushLocked() error {
	if s.pending == nil {
		return nil
	}
	b := s.pending
	s.pending = nil
	err := s.setMetas(b)
	clear(s.pendingMeta)
	if err != nil {
		_ = b.Close()
	} else {
		err = s.db.CommitNoSync(b)
	}
	if err != nil {
		s.lost = fmt.Errorf("%w: %w", ErrLost, err)
		return s.lost
	}
	return nil
}

// setMetas adds the pending metas to b.
func (s *Snapshots) setMetas(b *pebble.Batch) error {
	for p, m := range s.pendingMeta {
		if err := setMeta(b, p, m); err != nil {
			return err
		}
	}
	return nil
}

// write commits b after the pending rounds, which closes it.
func (s *Snapshots) write(b *pebble.Batch) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.flushLocked(); err != nil {
		_ = b.Close()
		return err
	}
	return s.db.CommitNoSync(b)
}

// Read counts the changelog records restores have read.
func (s *Snapshots) Read() int64 { return s.read.Load() }

// snapKey is kind, partition p, then key.
func snapKey(kind byte, p int32, key []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{kind}, uint32(p)), key...)
}

// meta is what partition p's copy covers; false if there is none.
func (s *Snapshots) meta(p int32) (kafkalog.Snapshot, bool, error) {
	if err := s.flush(); err != nil {
		return kafkalog.Snapshot{}, false, err
	}
	return s.storedMeta(p)
}

// storedMeta is meta without the pending rounds.
func (s *Snapshots) storedMeta(p int32) (kafkalog.Snapshot, bool, error) {
	var m kafkalog.Snapshot
	v, ok, err := s.db.Get(snapKey(snapMeta, p, nil))
	if err != nil || !ok {
		return m, false, err
	}
	if len(v) < metaLen {
		return m, false, fmt.Errorf("changelog: snapshot meta of partition %d: %d bytes, want %d or more", p, len(v), metaLen)
	}
	copy(m.Topic[:], v)
	m.Offset = int64(binary.BigEndian.Uint64(v[16:]))
	m.Epoch = int32(binary.BigEndian.Uint32(v[24:]))
	m.Taken = time.Unix(0, int64(binary.BigEndian.Uint64(v[28:])))
	if len(v) > metaLen {
		st, err := kafkalog.ReadChainState(m.Offset, v[metaLen:])
		if err != nil {
			return m, false, fmt.Errorf("changelog: snapshot meta of partition %d: %w", p, err)
		}
		m.Chain = &st
	}
	return m, true, nil
}

// metaLen is the length of a meta without a chain state; one with it goes
// on with kafkalog.AppendChainState's bytes.
const metaLen = 16 + 8 + 4 + 8

func setMeta(b *pebble.Batch, p int32, m kafkalog.Snapshot) error {
	v := append(make([]byte, 0, metaLen), m.Topic[:]...)
	v = binary.BigEndian.AppendUint64(v, uint64(m.Offset))
	v = binary.BigEndian.AppendUint32(v, uint32(m.Epoch))
	v = binary.BigEndian.AppendUint64(v, uint64(m.Taken.UnixNano()))
	if m.Chain != nil {
		v = kafkalog.AppendChainState(v, *m.Chain)
	}
	return b.Set(snapKey(snapMeta, p, nil), v, nil)
}

// position is where a round leaves a partition's copy: the changelog
// offset it covers, and the chain state there.
type position struct {
	offset int64
	chain  *kafkalog.ChainState
}

// commit adds outs' changes to their partitions' copies in the pending
// batch, and moves each copy in to to its position in the pending metas;
// it commits the batch once it holds commitAt bytes.
func (s *Snapshots) commit(outs []kafkalog.Output, to map[int32]position) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.lost != nil {
		return s.lost
	}
	if s.pending == nil {
		s.pending = s.db.NewBatchWithSize(s.commitAt + pendingRoom)
	}
	if err := s.fill(s.pending, outs, to); err != nil {
		// The batch may hold part of the round: drop the pending rounds,
		// as a crash would, rather than commit half of one.
		_ = s.pending.Close()
		s.pending = nil
		clear(s.pendingMeta)
		s.lost = fmt.Errorf("%w: %w", ErrLost, err)
		return s.lost
	}
	if s.pending.Len() < s.commitAt {
		return nil
	}
	return s.flushLocked()
}

func (s *Snapshots) fill(b *pebble.Batch, outs []kafkalog.Output, to map[int32]position) error {
	var prefix [5]byte // snapKey(snapData, partition, nil), not allocated per record
	prefix[0] = snapData
	for _, o := range outs {
		if o.Kind != kafkalog.Change {
			continue
		}
		binary.BigEndian.PutUint32(prefix[1:], uint32(o.Partition))
		if err := Replay(b, prefix[:], o.Key, o.Value); err != nil {
			return err
		}
	}
	now := time.Now()
	for p, at := range to {
		m, ok := s.pendingMeta[p]
		if !ok {
			var err error
			if m, ok, err = s.storedMeta(p); err != nil {
				return err
			}
		}
		if !ok { // never restored here: its restore sets what it covers
			continue
		}
		m.Offset, m.Taken, m.Chain = at.offset, now, at.chain
		s.pendingMeta[p] = m
	}
	return nil
}

// restoreWriter writes a partition's records into the cache and its copy,
// in batches of a few MiB.
type restoreWriter struct {
	cache  *store.Store
	snap   *Snapshots
	cb, sb *pebble.Batch
	prefix []byte
}

// drop deletes partition p's copy, read again from the changelog's start:
// without its meta a copy cut short by a crash is not used.
func (w *restoreWriter) drop(p int32) error {
	if err := w.sb.DeleteRange(w.prefix, snapKey(snapData, p+1, nil), nil); err != nil {
		return err
	}
	return w.sb.Delete(snapKey(snapMeta, p, nil), nil)
}

// copy writes the partition's copy, with its pending rounds, into the
// cache.
func (w *restoreWriter) copy() error {
	if err := w.snap.whole(); err != nil {
		return err
	}
	upper := store.UpperBound(w.prefix)
	return w.snap.db.Scan(w.prefix, upper, false, func(k, v []byte) (bool, error) {
		if err := w.cb.Set(k[len(w.prefix):], v, nil); err != nil {
			return false, err
		}
		return true, w.spill()
	})
}

// add replays a changelog record into the cache, if any, and the copy.
func (w *restoreWriter) add(k, v []byte) error {
	if w.cb != nil {
		if err := Replay(w.cb, nil, k, v); err != nil {
			return err
		}
	}
	if err := Replay(w.sb, w.prefix, k, v); err != nil {
		return err
	}
	return w.spill()
}

// spill commits the batches once they hold a few MiB. Replaying a copy's
// records again from its meta's offset is harmless: a record's effect
// does not depend on what came before it.
func (w *restoreWriter) spill() error {
	if w.sb.Len() < 4<<20 && (w.cb == nil || w.cb.Len() < 4<<20) {
		return nil
	}
	return w.flush()
}

// flush commits the batches (which closes them) and begins new ones.
// A writer with no cache (a take's restore: RestoreChain) writes the copy
// alone.
func (w *restoreWriter) flush() error {
	if w.cb != nil {
		cb := w.cb
		w.cb = nil
		if err := w.cache.CommitNoSync(cb); err != nil {
			return err
		}
		w.cb = w.cache.NewBatch()
	}
	sb := w.sb
	w.sb = nil
	if err := w.snap.write(sb); err != nil {
		return err
	}
	w.sb = w.snap.db.NewBatch()
	return nil
}

func (w *restoreWriter) close() {
	for _, b := range []*pebble.Batch{w.cb, w.sb} {
		if b != nil {
			_ = b.Close()
		}
	}
	w.cb, w.sb = nil, nil
}
