package transfer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRetryJitterSpreadsWithinItsBound: VUs refused together draw
// different extra waits, each below the jitter; with no jitter they wait
// exactly Retry-After.
func TestRetryJitterSpreadsWithinItsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if got := (&transferVU{}).retryJitter(r); got != 0 {
		t.Errorf("no jitter: extra wait %v, want 0", got)
	}
	vu := &transferVU{jitter: 500 * time.Millisecond}
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := vu.retryJitter(r)
		if d < 0 || d >= vu.jitter {
			t.Fatalf("extra wait %v outside [0, %v)", d, vu.jitter)
		}
		seen[d] = true
	}
	if len(seen) < 900 {
		t.Errorf("1,000 draws gave %d distinct waits: not spread", len(seen))
	}
}
