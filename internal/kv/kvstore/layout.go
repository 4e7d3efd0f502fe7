package kvstore

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/store"
)

// Key-value entries are stored under the prefix kv/<key>, in a
// Pebble database of their own (Open). A scan bounded by [kv/, kv0) sees
// entries only ('0' is the byte after '/').
const (
	kvPrefix = "kv/"
	kvEnd    = "kv0"
)

// l0CompactionThreshold keeps the key-value database's level 0 short.
// Every overlapping L0 file costs each GET a lookup, and the ledger's
// threshold of 16 lets L0 hold many sublevels: a GET cost the server
// markedly more CPU on such a store than on a copy with L0 compacted away
// (docs/BENCHMARKS.md, "Figures behind the code"). Pebble's default, 4,
// keeps L0 short at the price of compacting more often under writes.
const l0CompactionThreshold = 4

// Open opens (creating if needed) the database of key-value entries in dir:
// store.Open with a level 0 kept short for point reads. Keeping the entries
// out of the ledger's database also keeps a flood of key-value writes from
// stalling the ledger's commits behind its memtable flushes and
// compactions.
func Open(dir string, o store.Options) (*store.Store, error) {
	o.L0CompactionThreshold = l0CompactionThreshold
	return store.Open(dir, o)
}

// keys recycles the buffers that storage keys are built in, so that a
// request costs no allocation for its key.
var keys = sync.Pool{New: func() any { b := make([]byte, 0, 64); return &b }}

func entryKey(key string) *[]byte {
	p := keys.Get().(*[]byte)
	*p = append(append((*p)[:0], kvPrefix...), key...)
	return p
}

func releaseKey(p *[]byte) { keys.Put(p) }

// putEntry stores value under key, returning once the write is applied;
// the caller waits for its fsync with the returned write's Wait.
func putEntry(db *store.Store, key string, value []byte) (store.Pending, error) {
	k := entryKey(key)
	defer releaseKey(k)
	b := db.NewBatch()
	_ = b.Set(*k, value, nil)
	return db.CommitNoWait(b)
}

// deleteEntry removes key as putEntry stores it. Removing an absent key is
// not an error.
func deleteEntry(db *store.Store, key string) (store.Pending, error) {
	k := entryKey(key)
	defer releaseKey(k)
	b := db.NewBatch()
	_ = b.Delete(*k, nil)
	return db.CommitNoWait(b)
}

// getEntry looks key up; fn sees its value only during the call.
func getEntry(db *store.Store, key string, fn func(value []byte) error) (found bool, err error) {
	k := entryKey(key)
	defer releaseKey(k)
	return db.GetFunc(*k, fn)
}

// Iter walks the entries of a key range in key order, over a consistent
// snapshot of the store taken when it was opened. It must be closed.
type Iter struct {
	it      *pebble.Iterator
	started bool
	err     error
}

// scanEntries opens an iterator over the keys in [start, end), or from
// start to the last key if end is empty.
func scanEntries(db *store.Store, start, end string) (*Iter, error) {
	upper := []byte(kvEnd)
	if end != "" {
		upper = []byte(kvPrefix + end)
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(kvPrefix + start), UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return &Iter{it: it}, nil
}

// Next returns the next entry, or ok false at the end of the range or on
// an error (see Err). key and value are valid until the next call.
func (i *Iter) Next() (key, value []byte, ok bool) {
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
func (i *Iter) Err() error {
	if i.err != nil {
		return i.err
	}
	return i.it.Error()
}

// Close releases the iterator's snapshot.
func (i *Iter) Close() error { return i.it.Close() }
