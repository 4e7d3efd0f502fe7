package kafkalog

import (
	"context"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openTransaction begins a transaction of a transactional producer of its
// own, as a node of older surge began a round, and produces records in
// it; the caller ends it (EndTransaction).
func openTransaction(t *testing.T, ctx context.Context, c Config, id string, records ...*kgo.Record) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.TransactionalID(c.Cluster+"-"+id),
		kgo.TransactionTimeout(testTimeout), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// commitInTransaction commits the group's offset of the commands
// partition p at `at` in txn's open transaction (AddOffsetsToTxn, then
// TxnOffsetCommit), as a transactional round committed its position.
func commitInTransaction(t *testing.T, ctx context.Context, txn *kgo.Client, id string, c Config, p int32, at int64) {
	t.Helper()
	pid, epoch, err := txn.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = c.Cluster+"-"+id, pid, epoch, c.Group()
	added, err := add.RequestWith(ctx, txn)
	if err == nil {
		err = kerr.ErrorForCode(added.ErrorCode)
	}
	if err != nil {
		t.Fatalf("adding the group's offsets to the transaction: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = add.TransactionalID, c.Group(), pid, epoch
	commit.Generation, commit.MemberID = -1, ""
	topics, err := kadm.NewClient(txn).ListTopics(ctx, c.CommandsTopic())
	if err != nil {
		t.Fatal(err)
	}
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic, topic.TopicID = c.CommandsTopic(), topics[c.CommandsTopic()].ID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, at, -1
	topic.Partitions = append(topic.Partitions, rp)
	commit.Topics = append(commit.Topics, topic)
	resp, err := commit.RequestWith(ctx, txn)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("committing offset %d in the transaction: %v", at, err)
	}
}

// A member joining a cluster whose rounds were transactions (the upgrade)
// while a node of older surge left its round's transaction open: one
// transaction holds a change to the changelog, another a command to the
// commands topic and the group's offset of the partition past the
// commands it read. The member's take waits for the first to end before
// it reads the changelog (the last stable offset, endOffset), and its
// group fetch for the second before it reads the commands (RequireStable);
// its request counts show it waited at each. Aborted, neither's records
// count: the member reads the commands on from the offset committed
// before, and never applies the aborted command. Committed, it restores
// the change and reads the commands on from the transaction's offset, the
// transaction's command among them.
func TestChainMemberWaitsForAnOpenTransaction(t *testing.T) {
	for _, end := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		name := map[kgo.TransactionEndTry]string{kgo.TryAbort: "aborted", kgo.TryCommit: "committed"}[end]
		t.Run(name, func(t *testing.T) { memberAfterAnOpenTransaction(t, end) })
	}
}

func memberAfterAnOpenTransaction(t *testing.T, end kgo.TransactionEndTry) {
	const before, inTxn = 1, 3 // the group's offsets: committed, and in the transaction
	ctx, c := newCluster(t, 1)
	c.Meter = NewMeter(prometheus.NewRegistry())
	appendCommands(t, ctx, c, 0, 4) // cmd-i at offset i
	adm := kadm.NewClient(newClient(t, c))
	var offsets kadm.Offsets
	offsets.AddOffset(c.CommandsTopic(), 0, before, -1)
	if err := adm.CommitAllOffsets(ctx, c.Group(), offsets); err != nil {
		t.Fatal(err)
	}
	changes := openTransaction(t, ctx, c, "changes", &kgo.Record{Topic: c.ChangelogTopic(), Key: []byte("k/txn"), Value: []byte("v")})
	commands := openTransaction(t, ctx, c, "offsets", &kgo.Record{Topic: c.CommandsTopic(), Key: []byte("cmd-txn"), Value: []byte("cmd-txn")})
	commitInTransaction(t, ctx, commands, "offsets", c, 0, inTxn)

	requests := func(client, kind string) float64 {
		return testutil.ToFloat64(c.Meter.requests.WithLabelValues(client, kind))
	}
	a := joinChain(t, c, "a")
	// The take asks for the changelog's end, then for its last stable
	// offset until that reaches the end: a third request while the
	// transaction is open is a second look.
	pollUntil(t, ctx, func() bool { return requests("other", "ListOffsets") >= 3 }, "the take looked at the last stable offset again")
	if err := changes.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	// The group consumer fetches the offsets of a partition assigned once,
	// and again while a transaction commits one.
	pollUntil(t, ctx, func() bool { return requests("member", "OffsetFetch") >= 2 }, "the group fetched the offsets again")
	if err := commands.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
	appendCommands(t, ctx, c, 4, 1)
	for a.appliedKeys()["cmd-4"] == 0 {
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"cmd-1": 1, "cmd-2": 1, "cmd-3": 1, "cmd-4": 1}
	restored := map[string]string{}
	if end == kgo.TryCommit {
		want = map[string]int{"cmd-3": 1, "cmd-txn": 1, "cmd-4": 1}
		restored = map[string]string{"k/txn": "v"}
	}
	if got := a.appliedKeys(); !maps.Equal(got, want) {
		t.Errorf("the member applied %v, want %v", got, want)
	}
	if got := a.s.of(0); got["k/txn"] != restored["k/txn"] {
		t.Errorf("the member restored k/txn=%q, want %q", got["k/txn"], restored["k/txn"])
	}
}
