package store

import (
	"errors"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
)

// Key-value entries (SPEC §3.3) are stored under the prefix kv/<key>, in a
// Pebble database of their own (OpenKV). A scan bounded by [kv/, kv0) sees
// entries only ('0' is the byte after '/').
const (
	kvPrefix = "kv/"
	kvEnd    = "kv0"
)

// kvL0CompactionThreshold keeps the key-value database's level 0 short.
// Every overlapping L0 file costs each GET a lookup: on a 1.3 M-key store
// whose L0 held 6 sublevels (the ledger's threshold of 16 allows up to 15),
// a GET cost the server 24 µs of CPU, against 16 µs once L0 was compacted
// away (copies of one store, the same binary). Pebble's default, 4, keeps
// it so at the price of compacting more often under writes.
const kvL0CompactionThreshold = 4

// OpenKV opens (creating if needed) a store for key-value entries in dir:
// Open with a level 0 kept short for point reads. Keeping the entries out
// of the ledger's database also keeps a flood of key-value writes from
// stalling the ledger's commits behind its memtable flushes and
// compactions.
func OpenKV(dir string, o Options) (*Store, error) {
	o.L0CompactionThreshold = kvL0CompactionThreshold
	return Open(dir, o)
}

// kvKeys recycles the buffers that storage keys are built in, so that a
// request costs no allocation for its key.
var kvKeys = sync.Pool{New: func() any { b := make([]byte, 0, 64); return &b }}

func kvKey(key string) *[]byte {
	p := kvKeys.Get().(*[]byte)
	*p = append(append((*p)[:0], kvPrefix...), key...)
	return p
}

func releaseKey(p *[]byte) { kvKeys.Put(p) }

// PutKV stores value under key and makes it durable (unless the store runs
// with NoSync) before it returns. Concurrent calls share WAL fsyncs: see
// Commit.
func (s *Store) PutKV(key string, value []byte) error {
	return waited(s.PutKVNoWait(key, value))
}

// DeleteKV removes key, durably as PutKV. Removing an absent key is not an
// error.
func (s *Store) DeleteKV(key string) error {
	return waited(s.DeleteKVNoWait(key))
}

func waited(w KVWrite, err error) error {
	if err != nil {
		return err
	}
	return w.Wait()
}

// KVWrite is a key-value write that readers can already see but that may
// not be durable yet. Wait must be called exactly once.
type KVWrite struct {
	s     *Store
	b     *pebble.Batch // nil when the write was already durable (or NoSync)
	start time.Time
}

// Wait returns once the write is durable, or its error if the WAL fsync
// failed.
func (w KVWrite) Wait() error {
	if w.b == nil {
		return nil
	}
	err := w.s.writeErr(w.b.SyncWait())
	if w.s.onSync != nil && err == nil {
		w.s.onSync(time.Since(w.start))
	}
	if cerr := w.b.Close(); err == nil {
		err = cerr
	}
	return err
}

// PutKVNoWait stores value under key as PutKV does, but returns once the
// write is applied, before its WAL fsync: the caller waits for that with
// the returned write's Wait, which lets a caller with several writes to
// acknowledge share one fsync among them.
func (s *Store) PutKVNoWait(key string, value []byte) (KVWrite, error) {
	k := kvKey(key)
	defer releaseKey(k)
	b := s.db.NewBatch()
	_ = b.Set(*k, value, nil)
	return s.commitNoWait(b)
}

// DeleteKVNoWait removes key as DeleteKV does, waiting as PutKVNoWait.
func (s *Store) DeleteKVNoWait(key string) (KVWrite, error) {
	k := kvKey(key)
	defer releaseKey(k)
	b := s.db.NewBatch()
	_ = b.Delete(*k, nil)
	return s.commitNoWait(b)
}

// commitNoWait commits b without waiting for its WAL fsync; without fsyncs
// (NoSync) it is an ordinary commit.
func (s *Store) commitNoWait(b *pebble.Batch) (KVWrite, error) {
	if s.writeO != pebble.Sync {
		return KVWrite{}, s.Commit(b)
	}
	start := time.Now()
	if err := s.applyBatch(b, s.writeO, true); err != nil {
		_ = b.Close() // refused before it reached the WAL: no fsync to wait for
		return KVWrite{}, err
	}
	return KVWrite{s: s, b: b, start: start}, nil
}

// GetKV looks key up. If it is present, fn is called with its value, which
// is valid only during the call (it points into storage, not a copy), and
// found is true.
func (s *Store) GetKV(key string, fn func(value []byte) error) (found bool, err error) {
	k := kvKey(key)
	defer releaseKey(k)
	db := s.reader()
	v, closer, err := db.Get(*k)
	if db != s.reader() {
		// The store faulted during the read, which may have seen a write
		// that failed: read again from the committed state.
		if err == nil {
			_ = closer.Close()
		}
		return s.GetKV(key, fn)
	}
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = fn(v)
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	return true, err
}

// KVIter walks the entries of a key range in key order, over a consistent
// snapshot of the store taken when it was opened. It must be closed.
type KVIter struct {
	it      *pebble.Iterator
	started bool
	err     error
	// committed is set when the iterator reads a faulted store's
	// read-only instance: nothing it shows can be undone.
	committed bool
}

// ScanKV opens an iterator over the keys in [start, end), or from start to
// the last key if end is empty.
func (s *Store) ScanKV(start, end string) (*KVIter, error) {
	upper := []byte(kvEnd)
	if end != "" {
		upper = []byte(kvPrefix + end)
	}
	db := s.reader()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(kvPrefix + start), UpperBound: upper})
	if err != nil {
		return nil, err
	}
	if db != s.reader() { // faulted meanwhile: see GetKV
		_ = it.Close()
		return s.ScanKV(start, end)
	}
	return &KVIter{it: it, committed: db != s.db}, nil
}

// Committed reports whether the iterator reads only committed state (a
// faulted store's read-only instance), which no crash can undo: then no
// write in flight needs waiting for.
func (i *KVIter) Committed() bool { return i.committed }

// Next returns the next entry, or ok false at the end of the range or on
// an error (see Err). key and value are valid until the next call.
func (i *KVIter) Next() (key, value []byte, ok bool) {
	if i.err != nil {
		return nil, nil, false
	}
	if i.started {
		ok = i.it.Next()
	} else {
		ok, i.started = i.it.First(), true
	}
	if !ok {
		return nil, nil, false
	}
	if value, i.err = i.it.ValueAndErr(); i.err != nil {
		return nil, nil, false
	}
	return i.it.Key()[len(kvPrefix):], value, true
}

// Err reports the error that ended the walk, if any.
func (i *KVIter) Err() error {
	if i.err != nil {
		return i.err
	}
	return i.it.Error()
}

// Close releases the iterator's snapshot.
func (i *KVIter) Close() error { return i.it.Close() }

// Syncs reports whether commits wait for the WAL fsync: false when the
// store runs with NoSync.
func (s *Store) Syncs() bool { return s.writeO == pebble.Sync }

// SyncWAL returns once everything committed to the store before the call
// is on disk. It appends an empty record to the WAL and waits for its
// fsync: Pebble writes the WAL in commit order and an fsync covers every
// record before it, so this makes durable every batch that was visible to
// readers when it was called. It joins the fsync of concurrent commits
// like any commit does.
func (s *Store) SyncWAL() error {
	return s.syncWAL()
}

// WALSyncs returns how many WAL fsyncs the store has done since it was
// opened, as Pebble's log writer counts them: with many commits waiting
// at once, one fsync serves them all, so this grows slower than the number
// of durable commits under concurrency. It gathers all of Pebble's
// metrics, so it is for monitoring, not for a request's path.
func (s *Store) WALSyncs() uint64 {
	h := s.db.Metrics().LogWriter.FsyncLatency
	if h == nil {
		return 0
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}
