package rpc

import (
	"hash/maphash"
	"sync"

	"github.com/surge-dev/surge/internal/wallet/social"
)

// stripeCount is the number of mutexes keys are spread over: far more
// than requests in flight, so unrelated keys rarely wait for each other.
const stripeCount = 1024

// stripes serialises work per key with a fixed array of mutexes, so no
// lock is allocated or freed per key.
type stripes[K any] struct {
	hash func(K) uint64
	mus  *[stripeCount]sync.Mutex
}

func newStripes[K any](hash func(K) uint64) stripes[K] {
	return stripes[K]{hash: hash, mus: new([stripeCount]sync.Mutex)}
}

// lock locks k's stripe and returns its unlock.
func (s stripes[K]) lock(k K) func() {
	mu := &s.mus[s.hash(k)%stripeCount]
	mu.Lock()
	return mu.Unlock
}

// tryLock locks k's stripe if it is free and returns its unlock.
func (s stripes[K]) tryLock(k K) (unlock func(), ok bool) {
	mu := &s.mus[s.hash(k)%stripeCount]
	if !mu.TryLock() {
		return nil, false
	}
	return mu.Unlock, true
}

var seed = maphash.MakeSeed()

func stringHash(s string) uint64 { return maphash.String(seed, s) }

func pairHash(p social.Pair) uint64 { return maphash.Comparable(seed, p) }
