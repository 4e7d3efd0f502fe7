package kafkalog

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// BenchmarkLocalWake: a round waiting for commands, with none to poll, is
// woken by a local command, as an owner's is by each message a peer link
// brings. cpu-ns/op is the process's CPU per wake, the adding
// goroutine's included.
func BenchmarkLocalWake(b *testing.B) {
	kc, err := kfake.NewCluster(kfake.SeedTopics(1, "commands"))
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics("commands"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	local := newTestLocal()
	g := &poller{cl: cl}
	g.begin(local)
	adds := make(chan struct{})
	defer close(adds)
	go func() {
		for range adds {
			local.add(localCommand(0, "c"))
		}
	}()
	ctx := context.Background()
	cpu := measure.ProcessCPU()
	for b.Loop() {
		adds <- struct{}{}
		if got, err := g.next(ctx, 10); err != nil || len(got) != 1 {
			b.Fatalf("woken round got %d commands, %v", len(got), err)
		}
	}
	b.ReportMetric(float64((measure.ProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
