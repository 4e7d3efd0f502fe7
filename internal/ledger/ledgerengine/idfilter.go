package ledgerengine

import (
	"math/bits"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// idFilter remembers every transfer id in the ledger, approximately: a
// "no" is certain, a "maybe" needs a storage lookup. Almost every new
// transfer carries a fresh idempotency key, and proving a key absent from
// Pebble was the costliest step of a transfer; the filter makes it one
// memory access per generation. It grows by adding a filter twice the size
// of the last, so its false-positive rate stays near the target however
// many ids arrive.
type idFilter struct {
	mu      sync.RWMutex
	filters []blockFilter
	size    uint // ids the newest filter was sized for
	room    uint // ids it takes before the next filter is added
}

func newIDFilter(expected uint) *idFilter {
	f := &idFilter{}
	f.grow(max(expected, 1<<20))
	return f
}

func (f *idFilter) grow(n uint) {
	f.filters = append(f.filters, newBlockFilter(n))
	f.size, f.room = n, n
}

// mayContain reports false only if id was never added.
func (f *idFilter) mayContain(id string) bool {
	h := xxhash.Sum64String(id)
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i := range f.filters {
		if f.filters[i].has(h) {
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
		f.filters[len(f.filters)-1].add(xxhash.Sum64String(id))
		f.room--
	}
}

// idFilterState is a copy of a filter's generations, as a checkpoint
// stores them.
type idFilterState struct {
	filters    []blockFilter
	size, room uint
}

// snapshot copies the filter. Only the newest generation takes new ids, so
// the older ones are shared, not copied.
func (f *idFilter) snapshot() idFilterState {
	f.mu.RLock()
	defer f.mu.RUnlock()
	filters := slices.Clone(f.filters)
	filters[len(filters)-1] = slices.Clone(filters[len(filters)-1])
	return idFilterState{filters: filters, size: f.size, room: f.room}
}

// restoreIDFilter returns the filter st copies.
func restoreIDFilter(st idFilterState) *idFilter {
	return &idFilter{filters: st.filters, size: st.size, room: st.room}
}

// blockFilter is a split-block Bloom filter, the layout Apache Parquet
// specifies: a key sets 8 bits, one in each 32-bit word of a single
// 32-byte block, so a lookup reads one cache line. A classic Bloom filter
// such as bits-and-blooms/bloom probes 7 bits scattered over the whole
// filter; with millions of ids that is 7 cache and TLB misses, a share of
// the batch route's server CPU that pprof shows plainly. No blocked filter was available
// from the module proxy this project uses, so this is written here; it is
// small.
type blockFilter []block

type block [8]uint32

// bitsPerID sizes a filter (TestIDFilter measures its false-positive
// rate). Every generation adds its rate, and each false positive costs a
// storage lookup: with fewer bits, the generations together sent enough
// new ids to storage to show in the batch route's profile.
const bitsPerID = 16

// salts spread a hash's low 32 bits over a block's eight words; they are
// the odd constants of the Parquet specification.
var salts = block{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

func newBlockFilter(ids uint) blockFilter {
	return make(blockFilter, max(1, (ids*bitsPerID+255)/256))
}

// at returns the block for hash h (its high 32 bits) and the bit mask
// (from its low 32 bits).
func (f blockFilter) at(h uint64) (*block, block) {
	i, _ := bits.Mul32(uint32(h>>32), uint32(len(f)))
	var mask block
	for w := range mask {
		mask[w] = 1 << ((uint32(h) * salts[w]) >> 27)
	}
	return &f[i], mask
}

func (f blockFilter) add(h uint64) {
	b, mask := f.at(h)
	for w := range b {
		b[w] |= mask[w]
	}
}

func (f blockFilter) has(h uint64) bool {
	b, mask := f.at(h)
	for w := range b {
		if b[w]&mask[w] == 0 {
			return false
		}
	}
	return true
}
