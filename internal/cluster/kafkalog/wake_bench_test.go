package kafkalog

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// BenchmarkLocalWake: a round waiting for commands, with none to poll, is
// woken by a local command, as an owner's is by each message a peer link
// brings. cpu-ns/op is the process's CPU per wake, the adding
// goroutine's included.
func BenchmarkLocalWake(b *testing.B) {
	g, local, _ := fakePoller(b)
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

// BenchmarkGather: a busy round (its predecessor read busyRound commands)
// gathers local commands that come one at a time, 200 µs apart, as an
// owner's do from its peers' links, until a gap passes without any.
// cpu-µs/op is the process's CPU per round, the adding goroutine's
// included.
func BenchmarkGather(b *testing.B) {
	const each = 20
	g, local, _ := fakePoller(b)
	ctx := context.Background()
	cpu := measure.ProcessCPU()
	for b.Loop() {
		g.last = busyRound
		g.begin(local)
		added := make(chan struct{})
		go func() {
			defer close(added)
			for range each {
				local.add(localCommand(0, "c"))
				time.Sleep(200 * time.Microsecond)
			}
		}()
		got, err := g.commands(ctx, ctx, 10*each)
		<-added
		if rest := local.Take(each); err != nil || len(got)+len(rest) != each {
			b.Fatalf("round got %d commands (%d left), %v", len(got), len(rest), err)
		}
	}
	b.ReportMetric(float64((measure.ProcessCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// fakePoller is a poller of a kfake cluster's commands topic, hooked as a
// member's is (fetchWakes), with a local source of its own and a client
// that produces to the topic at once.
func fakePoller(b *testing.B) (*poller, *testLocal, *kgo.Client) {
	b.Helper()
	kc, err := kfake.NewCluster(kfake.SeedTopics(1, "commands"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(kc.Close)
	g := &poller{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics("commands"), g.fetchWakes())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	g.cl = cl
	producer, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic("commands"), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(producer.Close)
	return g, newTestLocal(), producer
}

// BenchmarkGatherTopic: BenchmarkGather with commands that come through
// the commands topic, as a node's do with its peer links off, into rounds
// whose max is the commands of an op: a round ends when it has them all.
// cpu-µs/op is the process's CPU per op, the producing goroutine's and the
// in-process fake broker's included; ns/op is mostly the producer's
// pauses.
func BenchmarkGatherTopic(b *testing.B) {
	const each = 20
	g, local, producer := fakePoller(b)
	ctx := context.Background()
	rounds := 0
	cpu := measure.ProcessCPU()
	for b.Loop() {
		added := make(chan struct{})
		go func() {
			defer close(added)
			for range each {
				producer.Produce(ctx, &kgo.Record{Value: []byte("c")}, nil)
				time.Sleep(200 * time.Microsecond)
			}
		}()
		for n := 0; n < each; rounds++ {
			g.last = busyRound
			g.begin(local)
			got, err := g.commands(ctx, ctx, each-n)
			if err != nil {
				b.Fatal(err)
			}
			n += len(got)
		}
		<-added
	}
	b.ReportMetric(float64((measure.ProcessCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
}
