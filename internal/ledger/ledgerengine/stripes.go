package ledgerengine

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// stripedMap is a map from string keys, split into stripes that each have
// a lock of their own, for the maps every transfer touches from shard
// goroutines and readers at once: the committed view and the in-flight
// ids. Not sync.Map: since Go 1.24 it is a hash-trie that allocates a
// node for every key stored and walks several nodes per lookup, and on
// the batch route its three calls per transfer showed plainly in the
// server's profile, where a stripe costs a hash, an uncontended lock and one
// Go map operation.
type stripedMap[V any] struct {
	stripes [64]stripe[V]
}

type stripe[V any] struct {
	mu sync.RWMutex
	m  map[string]V
	// Pad to a cache line, so that stripes locked from different CPUs do
	// not share one.
	_ [32]byte
}

func newStripedMap[V any]() *stripedMap[V] {
	s := &stripedMap[V]{}
	for i := range s.stripes {
		s.stripes[i].m = make(map[string]V)
	}
	return s
}

func (s *stripedMap[V]) stripe(k string) *stripe[V] {
	return &s.stripes[xxhash.Sum64String(k)%uint64(len(s.stripes))]
}

func (s *stripedMap[V]) load(k string) (V, bool) {
	st := s.stripe(k)
	st.mu.RLock()
	v, ok := st.m[k]
	st.mu.RUnlock()
	return v, ok
}

func (s *stripedMap[V]) store(k string, v V) {
	st := s.stripe(k)
	st.mu.Lock()
	st.m[k] = v
	st.mu.Unlock()
}

// loadOrStore stores v unless k has a value, and reports whether it had.
func (s *stripedMap[V]) loadOrStore(k string, v V) (loaded bool) {
	st := s.stripe(k)
	st.mu.Lock()
	_, loaded = st.m[k]
	if !loaded {
		st.m[k] = v
	}
	st.mu.Unlock()
	return loaded
}

// each calls fn for every value, a stripe at a time; writes to the map
// meanwhile may or may not be seen.
func (s *stripedMap[V]) each(fn func(*V)) {
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		for _, v := range st.m {
			fn(&v)
		}
		st.mu.RUnlock()
	}
}

// deleteIf deletes k if its value is old.
func deleteIf[V comparable](s *stripedMap[V], k string, old V) {
	st := s.stripe(k)
	st.mu.Lock()
	if v, ok := st.m[k]; ok && v == old {
		delete(st.m, k)
	}
	st.mu.Unlock()
}
