package store

import (
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
)

// Pending is a committed write that readers can already see but that may
// not be durable yet (CommitNoWait). Wait must be called exactly once.
type Pending struct {
	s     *Store
	b     *pebble.Batch // nil when the write was already durable (or NoSync)
	start time.Time
}

// Wait returns once the write is durable, or its error if the WAL fsync
// failed.
func (w Pending) Wait() error {
	if w.b == nil {
		return nil
	}
	abandoned, err := w.s.await(w.b.SyncWait)
	if w.s.onSync != nil && err == nil {
		w.s.onSync(time.Since(w.start))
	}
	return closeBatch(w.b, abandoned, err)
}

// CommitNoWait commits b as Commit does, but returns once it is applied,
// before its WAL fsync: the caller waits for that with the returned
// write's Wait, which lets a caller with several writes to acknowledge
// share one fsync among them. Without fsyncs (NoSync) it is an ordinary
// commit.
func (s *Store) CommitNoWait(b *pebble.Batch) (Pending, error) {
	if s.writeO != pebble.Sync {
		return Pending{}, s.Commit(b)
	}
	start := time.Now()
	if abandoned, err := s.applyBatch(b, s.writeO, true); err != nil {
		_ = closeBatch(b, abandoned, nil) // no fsync to wait for
		return Pending{}, err
	}
	return Pending{s: s, b: b, start: start}, nil
}

// GetFunc looks key up. If it is present, fn is called with its value,
// which is valid only during the call (it points into storage, not a
// copy), and found is true.
func (s *Store) GetFunc(key []byte, fn func(value []byte) error) (found bool, err error) {
	db := s.reader()
	v, closer, err := db.Get(key)
	if db != s.reader() {
		// The store faulted during the read, which may have seen a write
		// that failed: read again from the committed state.
		if err == nil {
			_ = closer.Close()
		}
		return s.GetFunc(key, fn)
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

// Syncs reports whether commits wait for the WAL fsync: false when the
// store runs with NoSync.
func (s *Store) Syncs() bool { return s.writeO == pebble.Sync }

// SyncWAL returns once everything committed to the store before the call
// is on disk. It appends an empty record to the WAL and waits for its
// fsync: Pebble writes the WAL in commit order and an fsync covers every
// record before it, so this makes durable every batch that was visible to
// readers when it was called. It joins the fsync of concurrent commits
// like any commit does.
func (s *Store) SyncWAL() error { return s.syncWAL() }

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
