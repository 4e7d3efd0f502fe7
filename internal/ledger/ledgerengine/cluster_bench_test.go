//go:build unix

package ledgerengine

import (
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
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

// countingRounds is a cluster owner's Committer that counts the storage
// operations its rounds hand over: each is a key in the node's cache, in
// its local copy and in the changelog.
type countingRounds struct{ ops atomic.Int64 }

func (c *countingRounds) Commit(r *engine.Round) error {
	for _, b := range r.Batches {
		c.ops.Add(int64(b.Count()))
	}
	return nil
}

// BenchmarkClusterTransfers: a cluster owner's rounds of 100 transfers
// among 500 accounts on one shard (the credits, forwarded, are dropped),
// with the keys they write per transfer.
func BenchmarkClusterTransfers(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	rounds := &countingRounds{}
	eng, err := engine.Open(engine.Config{Dir: b.TempDir(), Shards: 1, Commit: rounds, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	l, err := Open(eng, Config{Cluster: true, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	eng.Start()
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = "c" + strconv.Itoa(i)
		mustOpenAccount(b, l, ids[i], ledger.MaxAmount)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]ledger.TransferRequest, 100)
	n, cpu, ops := 0, processCPU(b), rounds.ops.Load()
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			from := rng.IntN(len(ids))
			to := (from + 1 + rng.IntN(len(ids)-1)) % len(ids)
			reqs[i] = ledger.TransferRequest{ID: "t" + strconv.Itoa(n+i), From: ids[from], To: ids[to], Amount: 1}
		}
		if _, err := l.TransferBatch(ctx, reqs, false); err != nil {
			b.Fatal(err)
		}
		n += len(reqs)
	}
	reportRate(b, n, cpu)
	b.ReportMetric(float64(rounds.ops.Load()-ops)/float64(n), "keys/transfer")
}
