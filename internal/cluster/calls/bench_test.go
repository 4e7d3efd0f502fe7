//go:build unix

package calls

import (
	"context"
	"log/slog"
	"testing"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// Calls taken locally, as a node takes those of partitions it owns:
// answered by another goroutine, as an owner's round answers them, with
// many calls waiting at once (the caller's bookkeeping, its wait and the
// answer's hand-over), and answered before the call waits, one at a time
// (the bookkeeping alone).
func BenchmarkCallLocal(b *testing.B) {
	cmd := append([]byte{WorkloadLedger}, make([]byte, 90)...)
	reply := []byte("reply")
	// A request's context: a server's, whose Done all its requests share.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("Waiting", func(b *testing.B) {
		k := benchCaller()
		keys := make(chan []byte, 1024)
		k.SetLocal(func(_ int32, key, _ []byte) bool { keys <- key; return true })
		done := make(chan struct{})
		go func() {
			defer close(done)
			for key := range keys {
				_, rid, _ := ReplyAddress(key)
				k.Deliver(rid, reply)
			}
		}()
		b.SetParallelism(50)
		benchCalls(b, func(pb *testing.PB) {
			for pb.Next() {
				if _, err := k.Call(ctx, 1, cmd, Writes); err != nil {
					b.Error(err)
					return
				}
			}
		})
		close(keys)
		<-done
	})
	b.Run("Answered", func(b *testing.B) {
		k := benchCaller()
		k.SetLocal(func(_ int32, key, _ []byte) bool {
			_, rid, _ := ReplyAddress(key)
			k.Deliver(rid, reply)
			return true
		})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Call(ctx, 1, cmd, Writes); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchCaller is a caller of a node with an id as long as the nodes'.
func benchCaller() *Caller {
	return newCaller("0a1b2c3d-1111-2222-3333-444455556666", 3, slog.New(slog.DiscardHandler))
}

// benchCalls runs calls in parallel and reports the process's CPU time per
// call beside the time.
func benchCalls(b *testing.B, calls func(*testing.PB)) {
	b.ReportAllocs()
	cpu := measure.ProcessCPU()
	b.RunParallel(calls)
	b.ReportMetric(float64((measure.ProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
