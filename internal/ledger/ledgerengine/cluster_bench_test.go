//go:build unix

package ledgerengine

import (
	"strconv"
	"testing"
)

// A round's transfers name receivers of other shards whose currency the
// shard knows already: learning it again, from many rounds at once.
func BenchmarkLearnKnownCurrency(b *testing.B) {
	var r remoteCurrencies
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = "acct-" + strconv.Itoa(i)
		r.learnOne(ids[i], "EUR")
	}
	b.ReportAllocs()
	defer reportCPU(b, processCPU(b))
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			r.learnOne(ids[i%len(ids)], "EUR")
		}
	})
}
