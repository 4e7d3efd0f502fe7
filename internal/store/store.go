// Package store is surge's embedded storage, shared by every workload:
// Pebble databases under --data (the engine's, and the key-value entries'
// own: see kvstore.Open), batches, durable commits, reads and scans. Each
// workload lays out and encodes its own records, in its own store package
// (ledger/ledgerstore, tickets/ticketstore, wallet/walletstore).
package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options tune the storage engine.
type Options struct {
	// CacheBytes is the block cache size.
	CacheBytes int64
	// MemTableBytes is the size of each memtable.
	MemTableBytes uint64
	// NoSync acknowledges writes before they reach the disk. Faster, but a
	// power cut or kill -9 can lose the last acknowledged writes.
	NoSync bool
	// NoWAL keeps no write-ahead log, for a store some other log rebuilds
	// (a cluster node's engine cache, and its local copy, which flushes
	// on a clean stop): writes are applied to the memtable only, those not
	// yet flushed are lost when the process ends, and SyncWAL has nothing
	// to wait for. It implies NoSync.
	NoWAL bool
	// OnSync, if set, observes how long each durable commit took.
	OnSync func(time.Duration)
	// L0CompactionThreshold is how many overlapping files level 0 may
	// hold before it is compacted (0: 16, which suits the ledger; see
	// Open). Each of them costs every point read a lookup.
	L0CompactionThreshold int
	// UncompressedL0 stores level 0, what flushes write, uncompressed.
	// Under a steady write load it is compacted away within seconds, so
	// compressing it costs CPU (on the ledger's batch route, in A/B
	// pairs) and saves disk only briefly. The levels below stay compressed
	// (Snappy), where data settles and the disk saved lasts.
	UncompressedL0 bool
	// OnFault, if set, is told once when the store stops taking writes
	// because its disk failed one (see Fault).
	OnFault func(*Fault)
	// AcceptWALLoss opens a store whose newest WAL is damaged with valid
	// records after the damage, dropping them (see WALDamage); without it
	// Open refuses.
	AcceptWALLoss bool
	// HoldCompactions starts no compaction until ReleaseCompactions, so
	// that recovery after a crash has the CPUs (compactgate.go).
	HoldCompactions bool
	// FS is the file system under the store (nil: the operating system's);
	// tests inject faults with Pebble's errorfs through it.
	FS vfs.FS
}

// Store is the database. It is safe for concurrent use.
type Store struct {
	// db is the read-write Pebble instance; reads go to the instance in
	// reads, the same one until a write fault (fault.go).
	db      *pebble.DB
	reads   atomic.Pointer[pebble.DB]
	dir     string
	fs      vfs.FS
	popts   *pebble.Options
	guard   *guardFS // the read-write instance's file system (fault.go)
	fault   atomic.Pointer[Fault]
	faulted chan struct{} // closed with the first fault
	mu      sync.Mutex    // orders the first fault with opening
	onFault func(*Fault)
	// acceptWALLoss is Options.AcceptWALLoss.
	acceptWALLoss bool
	writeO        *pebble.WriteOptions
	onSync        func(time.Duration)
	// corruptFiles are the files a read found corrupt, said once each.
	corruptFiles sync.Map
	// gate holds compactions with Options.HoldCompactions, else nil.
	gate *compactionGate
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, o Options) (*Store, error) {
	if o.CacheBytes == 0 {
		o.CacheBytes = 256 << 20
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = 64 << 20
	}
	if o.L0CompactionThreshold == 0 {
		// Ledger writes are random keys (history entries of random
		// accounts), so every L0 file overlaps all of Lbase and each L0
		// compaction rewrites Lbase. Compacting 16 files at a time instead
		// of 4 amortises that rewrite: in A/B pairs of transfer runs it gave
		// more throughput and a lower p95 and p99. The ledger's reads are
		// mostly served from memory.
		o.L0CompactionThreshold = 16
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	popts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                o.MemTableBytes,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       o.L0CompactionThreshold,
		L0StopWritesThreshold:       64,
		FormatMajorVersion:          pebble.FormatNewest,
		DisableWAL:                  o.NoWAL,
	}
	for i := range popts.Levels {
		// Point lookups of absent keys (new idempotency keys) must not touch
		// data blocks.
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if o.UncompressedL0 {
		popts.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		// A level without its own setting takes the one above it.
		for i := 1; i < len(popts.Levels); i++ {
			popts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
		}
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	s := &Store{dir: dir, fs: o.FS, popts: popts, faulted: make(chan struct{}), acceptWALLoss: o.AcceptWALLoss, onFault: o.OnFault, writeO: pebble.Sync, onSync: o.OnSync}
	if o.NoSync || o.NoWAL {
		s.writeO = pebble.NoSync
	}
	if o.HoldCompactions {
		s.gate = newCompactionGate()
	}
	popts.Logger = pebbleLogger{s}
	popts.EventListener = &pebble.EventListener{DataCorruption: s.corrupt}
	if err := s.open(); err != nil {
		return nil, fmt.Errorf("open storage in %s: %w", dir, err)
	}
	return s, nil
}

// Close writes out the WAL (a NoSync store's last commits may wait in its
// writer's buffer; a store without one, NoWAL, keeps only what its flushes
// wrote: see Flush) and releases the database. A faulted store closes only
// its read-only instance: the fenced one can write nothing, and the
// process keeps its lock on the directory until it exits. A close whose
// own write faults the store is left parked, as the fence leaves all the
// failed instance's file work (await), and Close returns the fault.
func (s *Store) Close() error {
	if r := s.reads.Load(); r != s.db {
		return r.Close()
	}
	_, err := s.await(s.db.Close)
	if r := s.reads.Load(); r != s.db {
		_ = r.Close()
	}
	return err
}

// Flush writes the memtables to table files and waits until they are on
// disk: what a store without a WAL (NoWAL) needs for its commits so far
// to outlive the process. A fault while it waits ends the wait with the
// fault (await).
func (s *Store) Flush() error {
	if f := s.reported(); f != nil {
		return f
	}
	_, err := s.await(s.db.Flush)
	return err
}

// Dir returns the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// NewBatch returns an empty write batch.
func (s *Store) NewBatch() *pebble.Batch { return s.db.NewBatch() }

// NewBatchWithSize returns an empty write batch whose buffer holds size
// bytes: a large batch built in one go, which would otherwise grow by
// doubling and copy what it holds each time.
func (s *Store) NewBatchWithSize(size int) *pebble.Batch { return s.db.NewBatchWithSize(size) }

// Commit makes b durable (unless the store runs with NoSync) and closes it.
// Concurrent commits share one WAL fsync: Pebble groups them.
func (s *Store) Commit(b *pebble.Batch) error {
	start := time.Now()
	abandoned, err := s.applyBatch(b, s.writeO, false)
	if s.onSync != nil && err == nil {
		s.onSync(time.Since(start))
	}
	return closeBatch(b, abandoned, err)
}

// closeBatch closes b after a write that returned err, unless Pebble may
// still hold it (applyBatch), and returns err or the close's error.
func closeBatch(b *pebble.Batch, abandoned bool, err error) error {
	if abandoned {
		return err
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	return err
}

// CommitNoSync applies b without waiting for an fsync, and closes it. The
// WAL keeps commit order, so b becomes durable with the next synced commit
// of any writer, and a crash can only lose a suffix of such commits: use it
// for records that a later synced commit covers, or that recovery rebuilds.
func (s *Store) CommitNoSync(b *pebble.Batch) error {
	abandoned, err := s.applyBatch(b, pebble.NoSync, false)
	return closeBatch(b, abandoned, err)
}

// NewIter returns an iterator over the keys o bounds. The caller closes it.
func (s *Store) NewIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	return s.reader().NewIter(o)
}

// Record is a key and its value, written by one component in another's
// batch.
type Record struct{ Key, Value []byte }

// Secret returns the secret stored at key, creating it with generate (and
// making it durable) on first use.
func (s *Store) Secret(key []byte, generate func() ([]byte, error)) ([]byte, error) {
	v, ok, err := s.Get(key)
	if err != nil || ok {
		return v, err
	}
	secret, err := generate()
	if err != nil {
		return nil, err
	}
	b := s.NewBatch()
	_ = b.Set(key, secret, nil)
	if err := s.Commit(b); err != nil {
		return nil, err
	}
	return secret, nil
}

// Get returns a copy of the value at key, or ok false if absent.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	v, closer, err := s.reader().Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	value = append([]byte(nil), v...)
	return value, true, closer.Close()
}

// Scan calls fn for each key in [lower, upper), in ascending order or, with
// reverse, descending, until fn returns false or an error. The slices passed
// to fn are valid only during the call.
func (s *Store) Scan(lower, upper []byte, reverse bool, fn func(key, value []byte) (bool, error)) (err error) {
	it, err := s.reader().NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if more, err := fn(it.Key(), v); err != nil || !more {
			return err
		}
	}
	return nil
}

// Metrics returns the storage engine's counters: sizes, write
// amplification, compactions.
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }
