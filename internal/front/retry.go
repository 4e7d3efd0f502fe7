package front

import (
	"strconv"
	"sync"
	"time"
)

// Every refusal that asks the client to come back (503 overloaded, a
// connection past MaxConns, gRPC's UNAVAILABLE) names when, in whole
// seconds: Retry-After, or gRPC's pushback. Told the same second, the
// clients refused together come back together, a herd that arrives in
// the same instant a second later, is refused again almost whole, and so
// on: the server answers the same crowd each second, and each of them
// waits for the rest of the herd to be answered before its own answer
// goes out. A whole number of seconds cannot shift a client's phase, but
// it can choose the second: retrySpread books each refusal's return in
// the earliest second ahead that has fewer than perSecond returns booked,
// so that however many clients are refused, no second sees more of them
// come back than the server holds requests in progress (MaxRequests), of
// which a second's returns could not take more anyway. Past
// maxRetryAfter seconds ahead every second is full; a refusal is then
// booked in the least booked.
type retrySpread struct {
	perSecond int64
	start     time.Time
	mu        sync.Mutex
	// booked counts the returns booked for each second ahead: slot
	// s % len is second s (since start) if its second is s, else empty.
	booked [maxRetryAfter + 1]struct{ second, n int64 }
}

// maxRetryAfter is the longest Retry-After, in seconds, a refusal asks.
const maxRetryAfter = 30

func newRetrySpread(perSecond int64) *retrySpread {
	return &retrySpread{perSecond: max(perSecond, 1), start: time.Now()}
}

// next books the return of a client refused now and returns its delay
// in seconds, 1 to maxRetryAfter.
func (r *retrySpread) next() int { return r.nextAt(int64(time.Since(r.start) / time.Second)) }

// nextAt is next for a refusal in second now (since r.start).
func (r *retrySpread) nextAt(now int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	least, leastN := 1, int64(-1)
	for k := 1; k <= maxRetryAfter; k++ {
		n := r.bookedLocked(now + int64(k))
		if n < r.perSecond {
			r.bookLocked(now + int64(k))
			return k
		}
		if leastN < 0 || n < leastN {
			least, leastN = k, n
		}
	}
	r.bookLocked(now + int64(least))
	return least
}

// bookedLocked is how many returns second s has booked; r.mu is held.
func (r *retrySpread) bookedLocked(s int64) int64 {
	if b := &r.booked[s%int64(len(r.booked))]; b.second == s {
		return b.n
	}
	return 0
}

// bookLocked books one more return in second s; r.mu is held.
func (r *retrySpread) bookLocked(s int64) {
	b := &r.booked[s%int64(len(r.booked))]
	if b.second != s {
		b.second, b.n = s, 0
	}
	b.n++
}

// retryAfterValues are the Retry-After header's values, by delay.
var retryAfterValues = func() (v [maxRetryAfter + 1]string) {
	for k := range v {
		v[k] = strconv.Itoa(k)
	}
	return v
}()

// returnsPerSecond is how many refused clients l's server tells to come
// back in the same second: as many as it holds requests in progress, or
// would by default when requests are not bounded.
func returnsPerSecond(l Limits) int64 {
	if l.MaxRequests > 0 {
		return l.MaxRequests
	}
	return DefaultLimits.MaxRequests
}
