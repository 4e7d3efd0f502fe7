// Package kvstore keeps surge's key-value entries (docs/API.md) in a Pebble
// database of their own (Open; their keys in layout.go) and makes its
// reads linearizable.
//
// Writes go straight to Pebble from the request's goroutine: a PUT or
// DELETE is one batch committed with a WAL fsync, and Pebble's log writer
// serves every commit waiting at the same moment with one fsync (group
// commit; see store.WALSyncs and layout_test.go). So concurrent writers share
// fsyncs without a queue of our own. A writer with several writes to
// acknowledge at once, such as a connection with pipelined requests, makes
// them share a fsync too: PutNoWait and DeleteNoWait apply a write and
// leave the wait for its fsync to the caller.
//
// Reads need care: Pebble makes a committed batch visible to readers before
// its WAL fsync has finished, and a kill -9 in that window would undo a
// value a reader had already been shown. So every write marks its key's
// slot in a table of in-flight writes before it commits and unmarks it once
// durable, and a read that finds its key's slot marked after reading waits
// for a WAL fsync that covers everything it could have seen (see settle).
package kvstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/store"
)

// slots is the size of the in-flight table. Keys share a slot by hash; a
// shared slot only makes a read wait for a fsync it did not need, so the
// table is sized to make that rare with hundreds of writers in flight.
const slots = 4096

// Store reads and writes key-value entries (it is the kvapi.Store of one
// process). It is safe for concurrent use. Its calls answer from the local
// disk and do not watch their context.
type Store struct {
	db *store.Store
	// durable is false when the store runs without fsync (--no-sync):
	// nothing is promised across a crash, so reads need not wait.
	durable bool
	// writing counts, per slot of key hashes, the writes that are committing
	// and not yet durable; pending counts them all, for range scans.
	writing [slots]atomic.Int32
	pending atomic.Int64
	metrics metrics
}

type metrics struct {
	barriers prometheus.Counter
}

// New returns a Store over db, registering its metrics with reg (nil:
// none).
func New(db *store.Store, reg prometheus.Registerer) *Store {
	s := &Store{db: db, durable: db.Syncs()}
	s.metrics.barriers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "surge_kv_read_barriers_total",
		Help: "Key-value reads that met a write in flight on their key (or on all keys, for ranges) and waited for a WAL fsync before answering.",
	})
	if reg != nil {
		reg.MustRegister(s.metrics.barriers, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "surge_storage_wal_fsyncs_total",
			Help: "WAL fsyncs of the key-value store; fewer than durable writes when concurrent writes share them (group commit).",
		}, func() float64 { return float64(db.WALSyncs()) }))
	}
	return s
}

// Put stores value under key; once it returns nil the value is durable
// (unless the store runs with NoSync).
func (s *Store) Put(key string, value []byte) error {
	return waited(s.PutNoWait(context.Background(), key, value))
}

// Delete removes key, durably as Put. Deleting an absent key succeeds.
func (s *Store) Delete(key string) error {
	return waited(s.DeleteNoWait(context.Background(), key))
}

// PutNoWait stores value under key and returns once the write is applied,
// before it is durable. Readers can see it, and wait for it to be durable
// as they do for any write in flight. The caller must call the returned
// write's Wait, which returns once the write is durable, before it
// acknowledges the write; callers with several writes to acknowledge make
// them all share a fsync this way.
func (s *Store) PutNoWait(_ context.Context, key string, value []byte) (kv.Write, error) {
	slot := s.begin(key)
	w, err := putEntry(s.db, key, value)
	return s.written(slot, w, err)
}

// DeleteNoWait removes key, returning as PutNoWait does.
func (s *Store) DeleteNoWait(_ context.Context, key string) (kv.Write, error) {
	slot := s.begin(key)
	w, err := deleteEntry(s.db, key)
	return s.written(slot, w, err)
}

// write is a write applied but perhaps not yet durable (a kv.Write).
type write struct {
	s    *Store
	w    store.Pending
	slot int
}

// Wait returns once the write is durable. It must be called exactly once.
func (w *write) Wait() error {
	s, pending, slot := w.s, w.w, w.slot
	*w = write{}
	writes.Put(w)
	defer s.end(slot)
	return pending.Wait()
}

func (s *Store) written(slot int, w store.Pending, err error) (kv.Write, error) {
	if err != nil {
		s.end(slot)
		return nil, err
	}
	wr := writes.Get().(*write)
	*wr = write{s: s, w: w, slot: slot}
	return wr, nil
}

// writes recycles writes, which Wait releases, so that a PUT or DELETE
// costs no allocation for its handle.
var writes = sync.Pool{New: func() any { return new(write) }}

func waited(w kv.Write, err error) error {
	if err != nil {
		return err
	}
	return w.Wait()
}

// Get looks key up and returns its value appended to dst, or found false.
// It returns only once the answer is durable: no crash can undo what it
// shows.
func (s *Store) Get(_ context.Context, key string, dst []byte) (value []byte, found bool, err error) {
	found, err = getEntry(s.db, key, func(v []byte) error {
		dst = append(dst, v...)
		return nil
	})
	if err == nil {
		err = s.settle(key)
	}
	if err != nil {
		return nil, false, err
	}
	return dst, found, nil
}

// Scan opens an iterator over the keys in [start, end) (to the last key if
// end is empty), in key order, over a snapshot of the store of this moment.
// Like Get, it returns only once everything in the snapshot is durable.
// The iterator must be closed.
func (s *Store) Scan(_ context.Context, start, end string) (kv.Entries, error) {
	it, err := scanEntries(s.db, start, end)
	if err != nil {
		return nil, err
	}
	// A range can miss a key because an undurable DELETE hides it, so
	// every write in flight matters, not only those to keys it returns.
	if s.durable && s.pending.Load() != 0 {
		s.metrics.barriers.Inc()
		if err := s.db.SyncWAL(); err != nil {
			it.Close()
			return nil, err
		}
	}
	return it, nil
}

// begin marks a write to key as in flight and returns its slot (-1 when
// nothing needs marking).
func (s *Store) begin(key string) int {
	if !s.durable {
		return -1
	}
	slot := slotOf(key)
	s.writing[slot].Add(1)
	s.pending.Add(1)
	return slot
}

// end unmarks a write begun with begin, once it is durable or has failed.
func (s *Store) end(slot int) {
	if slot < 0 {
		return
	}
	s.pending.Add(-1)
	s.writing[slot].Add(-1)
}

// settle is called after a read of key and returns once what it read is
// durable. The read saw only writes that had begun (a write is marked
// before it commits, and Pebble shows a batch only once committed); any of
// those not yet durable is still marked. If none is marked, the read is
// durable already. Otherwise a WAL fsync issued now covers every batch the
// read could have seen, because Pebble writes the WAL in commit order and
// an fsync makes all of it durable up to that point. Waiting for it rather
// than for the marked writes themselves means a reader is never held up by
// writes that began after it looked, however hot the key.
func (s *Store) settle(key string) error {
	if !s.durable || s.writing[slotOf(key)].Load() == 0 {
		return nil
	}
	s.metrics.barriers.Inc()
	return s.db.SyncWAL()
}

func slotOf(key string) int { return int(xxhash.Sum64String(key) & (slots - 1)) }
