package node

import (
	"bytes"
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A node started on the changelog of a cluster whose rounds were Kafka
// transactions (an upgrade from older surge) serves the committed state
// only: a committed transaction's change counts, an aborted one's does
// not, neither a value it gave a key already set nor a key it alone set.
func TestNodeServesTheCommittedStateOfATransactionalChangelog(t *testing.T) {
	ctx := context.Background()
	_, src := fakeKafka(t)
	a := startNode(t, src, t.TempDir())
	settled(t, a)
	for key, value := range map[string]string{"x": "committed-x", "y": "aborted-y"} {
		put(t, a, key, value)
	}
	put(t, a, "x", "aborted-x")
	changes := changeRecords(t, ctx, src)
	a.Close()

	_, dst := fakeKafka(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(dst.Brokers...), kgo.TransactionalID("older-surge"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(dst.ChangelogTopic()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafkalog.EnsureTopics(ctx, cl, dst); err != nil {
		t.Fatal(err)
	}
	transaction(t, ctx, cl, changes, "committed-", kgo.TryCommit)
	transaction(t, ctx, cl, changes, "aborted-", kgo.TryAbort)

	b := startNode(t, dst, t.TempDir())
	settled(t, b)
	for key, want := range map[string]string{"x": "committed-x", "y": ""} {
		v, found, err := b.KV().Get(ctx, key, nil)
		if err != nil || string(v) != want || found != (want != "") {
			t.Errorf("get %s = %q found=%v err=%v, want %q", key, v, found, err, want)
		}
	}
}

// put sets key to value through n and waits until the write counts.
func put(t *testing.T, n *testNode, key, value string) {
	t.Helper()
	w, err := n.KV().PutNoWait(context.Background(), key, []byte(value))
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// changeRecords reads c's changelog, and returns its changes as a
// transactional round wrote them: key and value, no header.
func changeRecords(t *testing.T, ctx context.Context, c kafkalog.Config) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumeTopics(c.ChangelogTopic()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := endOffsets(ctx, cl, c.ChangelogTopic())
	if err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	for read := map[int32]int64{}; !reached(read, ends); {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			read[r.Partition] = r.Offset + 1
			if e, err := kafkalog.ReadEntry(r); err == nil && e.Kind == kafkalog.KindChange {
				out = append(out, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value})
			}
		})
	}
	return out
}

// transaction writes, in one transaction that end commits or aborts, the
// records of changes whose value holds marker, and fails t if there is
// none.
func transaction(t *testing.T, ctx context.Context, cl *kgo.Client, changes []*kgo.Record, marker string, end kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for _, r := range changes {
		if bytes.Contains(r.Value, []byte(marker)) {
			rs = append(rs, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value})
		}
	}
	if len(rs) == 0 {
		t.Fatalf("no change holds %q", marker)
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
}

// endOffsets are the end offsets of topic's partitions.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends, listed.Error()
}

// reached reports that read reaches every end of ends.
func reached(read, ends map[int32]int64) bool {
	for p, end := range ends {
		if read[p] < end {
			return false
		}
	}
	return true
}
