package engine

import (
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
)

// idFilter remembers every transfer id in the ledger, approximately: a
// "no" is certain, a "maybe" needs a storage lookup. Almost every new
// transfer carries a fresh idempotency key, and proving a key absent from
// Pebble was the costliest step of a transfer; the filter makes it a few
// hash probes. It grows by adding a filter twice the size of the last, so
// its false-positive rate stays near the target however many ids arrive.
type idFilter struct {
	mu      sync.RWMutex
	filters []*bloom.BloomFilter
	size    uint // ids the newest filter was sized for
	room    uint // ids it takes before the next filter is added
}

const idFilterFalsePositive = 0.01

func newIDFilter(expected uint) *idFilter {
	f := &idFilter{}
	f.grow(max(expected, 1<<20))
	return f
}

func (f *idFilter) grow(n uint) {
	f.filters = append(f.filters, bloom.NewWithEstimates(n, idFilterFalsePositive))
	f.size, f.room = n, n
}

// mayContain reports false only if id was never added.
func (f *idFilter) mayContain(id string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, bf := range f.filters {
		if bf.TestString(id) {
			return true
		}
	}
	return false
}

// add records ids.
func (f *idFilter) add(ids func(yield func(string) bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range ids {
		if f.room == 0 {
			f.grow(2 * f.size)
		}
		f.filters[len(f.filters)-1].AddString(id)
		f.room--
	}
}
