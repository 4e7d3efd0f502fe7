package ledgerengine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// The filter never forgets an id, across its generations, and says
// "maybe" for few ids it never saw.
func TestIDFilter(t *testing.T) {
	f := &idFilter{}
	f.grow(1000)
	var ids []string
	for i := range 20_000 {
		ids = append(ids, fmt.Sprintf("transfer-%d", i))
	}
	f.add(slices.Values(ids))
	if len(f.filters) != 5 { // 1000 + 2000 + 4000 + 8000 + 16000
		t.Fatalf("%d filters for 20,000 ids from 1,000", len(f.filters))
	}
	for _, id := range ids {
		if !f.mayContain(id) {
			t.Fatalf("%s was added and is not found", id)
		}
	}

	// One generation filled to its size: its false-positive rate.
	const n = 100_000
	g := newBlockFilter(n)
	for i := range n {
		g.add(xxhash.Sum64String(fmt.Sprint("in-", i)))
	}
	hits := 0
	for i := range n {
		if g.has(xxhash.Sum64String(fmt.Sprint("out-", i))) {
			hits++
		}
	}
	if rate := float64(hits) / n; rate > 0.01 {
		t.Fatalf("false-positive rate %.4f with %d bits per id", rate, bitsPerID)
	} else {
		t.Logf("false-positive rate %.4f with %d bits per id", rate, bitsPerID)
	}
}
