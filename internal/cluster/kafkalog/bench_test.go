package kafkalog

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// Benchmarks on the real broker (kafkatest), the figures of
// docs/BENCHMARKS.md and of docs/CLUSTER.md's "Measured on this machine":
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/cluster/kafkalog/

// BenchmarkRound times rounds over commands already in the log: one op is
// one round of up to batch commands, each giving a reply and a change,
// written with the partition's trailer in one acks=all write.
func BenchmarkRound(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			ctx, c := newBenchCluster(b)
			fill(b, ctx, c, b.N*batch)
			a := takenOnAll(b, ctx, c)
			lat := make([]time.Duration, 0, b.N)
			commands := 0
			b.ResetTimer()
			cpu := measure.ProcessCPU()
			for range b.N {
				t0 := time.Now()
				applied := countedRound(b, ctx, a, batch, nil, a.apply)
				lat = append(lat, time.Since(t0))
				commands += len(applied)
			}
			b.StopTimer()
			b.ReportMetric(float64((measure.ProcessCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			report(b, lat)
			b.ReportMetric(float64(commands)/b.Elapsed().Seconds(), "commands/s")
		})
	}
}

// BenchmarkRoundBrokerCPU measures what a round costs the broker, by the
// round's shape: a round of local commands, one for each of parts
// partitions, each writing recs changelog records of 300 bytes, then its
// trailer. One op is one round of each shape, in turn, so that the
// broker's warming up (its JIT) and the machine's other work weigh on
// every shape alike; it reports the broker's CPU time
// (kafkatest.Cluster.CPUTime, read around each round) per round of each
// shape, what the broker spends idle meanwhile included. Beside them, in
// the same turns, it reports what the broker spends on a plain write of
// the largest round's records (180 to one partition, acks=all,
// idempotent): a round's records without its trailer and its writer's
// bookkeeping. The plain write goes to a changelog partition no round
// writes (the seventh), where its records are no owner's foreign records
// to read and repair.
func BenchmarkRoundBrokerCPU(b *testing.B) {
	shapes := []struct{ parts, recs int }{{1, 1}, {6, 1}, {6, 30}, {1, 180}}
	ctx, c, k := newBenchClusterOf(b, 7)
	a := takenOnAll(b, ctx, c)
	value := make([]byte, 300)
	spent := make([]time.Duration, len(shapes))
	round := func(i, shape int) {
		recs := shapes[shape].recs
		apply := func(_ context.Context, batch []Command) ([]Output, error) {
			var outs []Output
			for _, cmd := range batch {
				for j := range recs {
					outs = append(outs, Output{Kind: Change, Partition: cmd.Partition, Key: fmt.Appendf(nil, "%s-%d", cmd.Key, j), Value: value})
				}
			}
			return outs, nil
		}
		local := newTestLocal()
		for p := range int32(shapes[shape].parts) {
			local.add(localCommand(p, fmt.Sprintf("l-%d-%d-%d", i, shape, p)))
		}
		cpu0 := brokerCPU(b, k)
		countedRound(b, ctx, a, shapes[shape].parts, local, apply)
		spent[shape] += brokerCPU(b, k) - cpu0
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.DefaultProduceTopic(c.ChangelogTopic()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	var plainSpent time.Duration
	plainWrite := func(i int) {
		recs := make([]*kgo.Record, 180)
		for j := range recs {
			recs[j] = &kgo.Record{Partition: 6, Key: fmt.Appendf(nil, "p-%d-%d", i, j), Value: value}
		}
		cpu0 := brokerCPU(b, k)
		if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		plainSpent += brokerCPU(b, k) - cpu0
	}
	b.ResetTimer()
	for i := range b.N {
		for shape := range shapes {
			round(i, shape)
		}
		plainWrite(i)
	}
	b.StopTimer()
	for i, sh := range shapes {
		b.ReportMetric(float64(spent[i].Microseconds())/float64(b.N), fmt.Sprintf("broker-µs/round-of-%dp-%dr", sh.parts, sh.recs))
	}
	b.ReportMetric(float64(plainSpent.Microseconds())/float64(b.N), "broker-µs/plain-produce-180r")
}

// brokerCPU is the CPU time k's brokers have used so far.
func brokerCPU(b *testing.B, k *kafkatest.Cluster) time.Duration {
	b.Helper()
	t, err := k.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// takenOnAll joins a member that took every partition of c.
func takenOnAll(b *testing.B, ctx context.Context, c Config) *chainNode {
	b.Helper()
	a := joinChain(b, c, "bench")
	a.await(b, ctx, func() bool { return len(a.taken) == int(c.Partitions) }, "took every partition")
	return a
}

// BenchmarkCommandLatency times one command end to end, one at a time: a
// node appends it (acks=all), and the owner's round reads it, applies it
// and writes its change (acks=all), its reply then ready to send.
func BenchmarkCommandLatency(b *testing.B) {
	ctx, c := newBenchCluster(b)
	p, err := NewProducer(c)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	a := takenOnAll(b, ctx, c)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		key := []byte("cmd-" + strconv.Itoa(i))
		if _, err := p.Append(ctx, 0, key, key); err != nil {
			b.Fatal(err)
		}
		for a.appliedKeys()[string(key)] == 0 {
			if _, err := a.round(ctx, ctx); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	report(b, lat)
}

// newBenchCluster names a fresh surge cluster of one partition on the
// shared broker.
func newBenchCluster(b *testing.B) (context.Context, Config) {
	ctx, c, _ := newBenchClusterOf(b, 1)
	return ctx, c
}

// newBenchClusterOf is newBenchCluster with partitions partitions, and the
// shared broker.
func newBenchClusterOf(b *testing.B, partitions int32) (context.Context, Config, *kafkatest.Cluster) {
	b.Helper()
	k := kafkatest.Shared(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	c := Config{Brokers: k.Brokers, Cluster: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36), Partitions: partitions}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := EnsureTopics(ctx, cl, c); err != nil {
		b.Fatal(err)
	}
	return ctx, c, k
}

// fill appends n commands to partition 0 without waiting for each.
func fill(b *testing.B, ctx context.Context, c Config, n int) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.DefaultProduceTopic(c.CommandsTopic()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		key := []byte("cmd-" + strconv.Itoa(i))
		cl.Produce(ctx, &kgo.Record{Key: key, Value: key}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// report adds the latency percentiles to the benchmark's line.
func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "ops/s")
}
