//go:build unix

package ledgerengine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// Benchmarks run with fsync on (the default), on a store in b.TempDir().
// Every account may overdraw up to MaxAmount, so no transfer fails for lack
// of funds. Each reports transfers/s and the process's CPU time per
// transfer, which other processes and the hypervisor's steal move far less
// than the rate (heavy steal still inflates it: the guest charges time
// stolen from a running thread to that thread).

func benchEngine(b *testing.B, shards int) *Ledger {
	b.Helper()
	return openEngine(b, opts{Dir: b.TempDir(), Shards: shards})
}

func benchAccounts(b *testing.B, e *Ledger, ids []string) {
	b.Helper()
	for _, id := range ids {
		mustOpenAccount(b, e, id, ledger.MaxAmount)
	}
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRate reports the rate and the CPU time per transfer since
// cpuBefore, which the benchmark took after its setup.
func reportRate(b *testing.B, transfers int, cpuBefore time.Duration) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(transfers)/s, "transfers/s")
	}
	if transfers > 0 {
		cpu := processCPU(b) - cpuBefore
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(transfers), "cpu-µs/transfer")
	}
}

// benchPair moves money back and forth between two accounts, one transfer
// at a time: the latency of one durable transfer.
func benchPair(b *testing.B, x, y string, e *Ledger) {
	n, cpu := 0, processCPU(b)
	for b.Loop() {
		req := ledger.TransferRequest{ID: "t" + strconv.Itoa(n), From: x, To: y, Amount: 1}
		if n%2 == 1 {
			req.From, req.To = y, x
		}
		if _, _, err := e.Transfer(ctx, req); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportRate(b, n, cpu)
}

func BenchmarkTransferSameShard(b *testing.B) {
	e := benchEngine(b, 2)
	ids := namesOn(e, 0, 2, "s")
	benchAccounts(b, e, ids)
	benchPair(b, ids[0], ids[1], e)
}

func BenchmarkTransferCrossShard(b *testing.B) {
	e := benchEngine(b, 2)
	x, y := namesOn(e, 0, 1, "x")[0], namesOn(e, 1, 1, "y")[0]
	benchAccounts(b, e, []string{x, y})
	benchPair(b, x, y, e)
}

// BenchmarkTransferParallel: many concurrent clients, random accounts over
// two shards; group commit shares each fsync among the waiting clients.
func BenchmarkTransferParallel(b *testing.B) {
	e := benchEngine(b, 2)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprint("p", i)
	}
	benchAccounts(b, e, ids)
	var seq, total atomic.Int64
	b.SetParallelism(64) // 64 clients per GOMAXPROCS
	cpu := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := seq.Add(1)
		rng := rand.New(rand.NewPCG(uint64(g), 7))
		n := int64(0)
		for pb.Next() {
			from := rng.IntN(len(ids))
			to := (from + 1 + rng.IntN(len(ids)-1)) % len(ids)
			req := ledger.TransferRequest{ID: fmt.Sprintf("g%d-%d", g, n), From: ids[from], To: ids[to], Amount: 1 + rng.Int64N(100)}
			if _, _, err := e.Transfer(ctx, req); err != nil {
				b.Error(err)
				return
			}
			n++
		}
		total.Add(n)
	})
	reportRate(b, int(total.Load()), cpu)
}

// BenchmarkBatch1000: batches of 1,000 transfers among 1,000 accounts of
// two shards, one batch at a time.
func BenchmarkBatch1000(b *testing.B) { benchBatches(b, 1000, 1000) }

// BenchmarkBatch8190Accounts50k is the engine's share of issue #2's batch
// route (bench transfer --batch 8190 over 50,000 accounts) without HTTP,
// JSON or a load generator: what the engine alone can sustain, against the
// target of 500,000 transfers/s.
func BenchmarkBatch8190Accounts50k(b *testing.B) { benchBatches(b, 50_000, 8190) }

// benchBatches sends batches of size transfers among random pairs of
// accounts, over two shards, one batch at a time.
func benchBatches(b *testing.B, accounts, size int) {
	e := benchEngine(b, 2)
	ids := make([]string, accounts)
	for i := range ids {
		ids[i] = fmt.Sprint("b", i)
	}
	benchAccountsParallel(b, e, ids)
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]ledger.TransferRequest, size)
	n, cpu := 0, processCPU(b)
	for b.Loop() {
		// Ids count up, as bench transfer's do (a prefix and a counter),
		// so that transfer records reach storage in key order as they do
		// under that load.
		for i := range reqs {
			from := rng.IntN(len(ids))
			to := (from + 1 + rng.IntN(len(ids)-1)) % len(ids)
			reqs[i] = ledger.TransferRequest{ID: fmt.Sprintf("b%012d", n*size+i), From: ids[from], To: ids[to], Amount: 1 + rng.Int64N(100)}
		}
		res, err := e.TransferBatch(ctx, reqs, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		n++
	}
	reportRate(b, n*len(reqs), cpu)
	// What each transfer costs the disk: in the log, and in tables at the
	// end (level 0 is stored uncompressed, the levels below compressed).
	m := e.db.Metrics()
	b.ReportMetric(float64(m.Total().TablesSize)/float64(n*len(reqs)), "tablebytes/transfer")
	b.ReportMetric(float64(m.WAL.BytesIn)/float64(n*len(reqs)), "walbytes/transfer")
}

// benchAccountsParallel opens the accounts from many goroutines, so that
// group commit shares the fsyncs and 50,000 accounts open in seconds.
func benchAccountsParallel(b *testing.B, e *Ledger, ids []string) {
	b.Helper()
	const openers = 256
	var wg sync.WaitGroup
	for g := range openers {
		wg.Go(func() {
			for i := g; i < len(ids); i += openers {
				spec := ledger.AccountSpec{ID: ids[i], Currency: "USD", OverdraftLimit: ledger.MaxAmount}
				if _, _, err := e.CreateAccount(ctx, spec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
