package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/cluster/kafkatest"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// The restores of these tests run on kfake, franz-go's in-memory Kafka:
// what they check is which changelog records a node reads and the state
// it ends with, not Kafka's timing (test/e2e runs a real broker).

const fakePartitions = 3

func fakeKafka(t *testing.T) (*kfake.Cluster, kafkalog.Config) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, kafkalog.Config{Brokers: c.ListenAddrs(), Cluster: "snap", Partitions: fakePartitions, SessionTimeout: 6 * time.Second}
}

// testNode is a node on kfake whose readiness the test can wait for.
type testNode struct {
	*Node
	ready chan struct{}
	once  sync.Once
}

// startNode starts a node on k with its data in dir, its Config set by
// opts.
func startNode(t *testing.T, k kafkalog.Config, dir string, opts ...func(*Config)) *testNode {
	t.Helper()
	tn := &testNode{ready: make(chan struct{}, 1)}
	cfg := Config{Kafka: k, Dir: dir, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(context.Background(), cfg, func(r bool) {
		if r {
			select {
			case tn.ready <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tn.Node = n
	t.Cleanup(tn.Close)
	return tn
}

// Close closes the node once.
func (n *testNode) Close() { n.once.Do(n.Node.Close) }

// settled waits until nodes are ready and own every partition between
// them, each exactly once.
func settled(t *testing.T, nodes ...*testNode) {
	t.Helper()
	var owned []int32
	ready := true
	until(t, func() bool {
		owned, ready = nil, true
		for _, n := range nodes {
			ready = ready && n.Ready() && n.built.Load() == n.gen.Load()
			owned = append(owned, n.Owned()...)
		}
		slices.Sort(owned)
		return ready && slices.Equal(owned, []int32{0, 1, 2})
	}, func() string { return fmt.Sprintf("nodes own %v (ready %v)", owned, ready) })
}

// until polls cond until it holds; after a minute the test fails with
// what's description of the state.
func until(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("%s after 60 s", what())
		case <-time.After(20 * time.Millisecond): // polls the condition
		}
	}
}

// drain forgets a readiness event not waited for, so that awaitReady
// waits for the next one.
func (n *testNode) drain() {
	select {
	case <-n.ready:
	default:
	}
}

// awaitReady waits until n becomes ready again after losing readiness.
func awaitReady(t *testing.T, n *testNode) {
	t.Helper()
	select {
	case <-n.ready:
	case <-time.After(60 * time.Second):
		t.Fatal("node not ready again after 60 s")
	}
}

// joinNode starts a second node beside a, which takes some of a's
// partitions, and waits until both serve the partitions they own.
func joinNode(t *testing.T, k kafkalog.Config, a *testNode, opts ...func(*Config)) *testNode {
	t.Helper()
	a.drain()
	b := startNode(t, k, t.TempDir(), opts...)
	awaitReady(t, a)
	settled(t, a, b)
	return b
}

func (n *testNode) read() int64 { return n.snaps.Read() }

// accounts creates n accounts funded with 1,000 each, and returns them.
func accounts(t *testing.T, n *testNode, count int) []string {
	t.Helper()
	ctx := context.Background()
	if err := n.CreateWorld(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range count {
		id := fmt.Sprint("acc", i)
		if _, _, err := n.Ledger().CreateAccount(ctx, ledger.AccountSpec{ID: id, Currency: "USD"}); err != nil {
			t.Fatal(err)
		}
		transfer(t, n, "fund-"+id, ledger.WorldID, id, 1000)
		ids = append(ids, id)
	}
	return ids
}

func transfer(t *testing.T, n *testNode, id, from, to string, amount int64) {
	t.Helper()
	_, _, err := n.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: id, From: from, To: to, Amount: amount})
	if err != nil {
		t.Fatalf("transfer %s: %v", id, err)
	}
}

// balances reads the accounts' balances through n.
func balances(t *testing.T, n *testNode, ids []string) string {
	t.Helper()
	s := ""
	for _, id := range ids {
		a, err := n.Ledger().Account(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("%s=%d ", id, a.Balance)
	}
	return s
}

// credited waits until n reads account id's balance as other than was.
func credited(t *testing.T, n *testNode, id, was string) {
	t.Helper()
	until(t, func() bool { return balances(t, n, []string{id}) != was },
		func() string { return fmt.Sprintf("%s still %s", id, was) })
}

// A node restarted on its data directory restores its partitions from its
// local snapshot: it reads no changelog record, and serves the state it
// left; a node with an empty directory reads the whole changelog to the
// same state.
func TestRestartRestoresFromTheLocalSnapshot(t *testing.T) {
	_, k := fakeKafka(t)
	dir := t.TempDir()
	a := startNode(t, k, dir)
	settled(t, a)
	ids := accounts(t, a, 6)
	transfer(t, a, "t1", ids[0], ids[1], 250)
	want := balances(t, a, ids)
	a.Close()

	a = startNode(t, k, dir)
	settled(t, a)
	if r := a.read(); r != 0 {
		t.Errorf("restarted node read %d changelog records, want 0 (its snapshot covers them all)", r)
	}
	if got := balances(t, a, ids); got != want {
		t.Fatalf("restarted node: %s, want %s", got, want)
	}
	transfer(t, a, "t2", ids[1], ids[2], 100)
	want = balances(t, a, ids)
	a.Close()

	fresh := startNode(t, k, t.TempDir())
	settled(t, fresh)
	if fresh.read() == 0 {
		t.Error("a node with an empty directory read no changelog record")
	}
	if got := balances(t, fresh, ids); got != want {
		t.Fatalf("node rebuilt from the changelog: %s, want %s", got, want)
	}
}

// Across a rebalance a node reads no changelog record for the partitions
// it keeps; a partition it gets back is restored from its snapshot and
// the records written since, fewer than its whole changelog.
func TestRebalanceReadsOnlyWhatMoved(t *testing.T) {
	_, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 12)
	before := a.read()

	b := joinNode(t, k, a)
	if len(a.Owned()) == 0 || len(b.Owned()) == 0 {
		t.Fatalf("a owns %v, b owns %v: want both to own some", a.Owned(), b.Owned())
	}
	if r := a.read() - before; r != 0 {
		t.Errorf("a read %d changelog records for the partitions it kept, want 0", r)
	}
	full := b.read()
	if full == 0 {
		t.Fatal("b read no changelog record for the partitions it took")
	}
	// One transfer on a partition b owns, then b leaves.
	var src string
	for _, id := range ids {
		if slices.Contains(b.Owned(), int32(engine.ShardIndex(id, fakePartitions))) {
			src = id
			break
		}
	}
	before0 := balances(t, a, ids[:1])
	transfer(t, a, "moved", src, ids[0], 7)
	// The credit to ids[0] travels from b's partition to a's as a command
	// of its own: a read a takes for its own partition may come first.
	credited(t, a, ids[0], before0)
	want := balances(t, a, ids)
	before = a.read()
	a.drain()
	b.Close()
	awaitReady(t, a)
	settled(t, a)
	tail := a.read() - before
	if tail == 0 || tail >= full {
		t.Errorf("a read %d changelog records to get back b's partitions, want some and fewer than their %d", tail, full)
	}
	if got := balances(t, a, ids); got != want {
		t.Fatalf("after b left: %s, want %s", got, want)
	}
}

// A round whose write does not count leaves nothing in the local
// snapshot: the node rebuilds from the snapshot, its client retries the
// call its round failed (its outcome unknown) with the same id, which is
// applied once, and a node rebuilt from the changelog alone, as one
// restored from the snapshot, has the transfer exactly once. Were the
// failed round's state kept, its transfer would be there with no record
// of it in the changelog.
func TestUncountedRoundDoesNotSurviveInTheSnapshot(t *testing.T) {
	kc, k := fakeKafka(t)
	dir := t.TempDir()
	a := startNode(t, k, dir)
	settled(t, a)
	ids := accounts(t, a, 2)
	owesNothing(t, a) // no write but the transfer's comes next
	var failed atomic.Int32
	kc.ControlKey(int16(kmsg.Produce), refuseWrite(&failed, k.ChangelogTopic(), topicID(t, k, k.ChangelogTopic())))
	req := ledger.TransferRequest{ID: "t1", From: ids[0], To: ids[1], Amount: 300}
	if _, _, err := a.Ledger().Transfer(context.Background(), req); err == nil {
		t.Fatal("a transfer whose write failed was answered")
	}
	if failed.Load() != 1 {
		t.Fatalf("%d writes failed, want 1", failed.Load())
	}
	transfer(t, a, req.ID, req.From, req.To, req.Amount)
	want := balances(t, a, ids)
	if want != fmt.Sprintf("%s=700 %s=1300 ", ids[0], ids[1]) {
		t.Fatalf("after the failed round and the retry: %s", want)
	}
	a.Close()

	a = startNode(t, k, dir)
	settled(t, a)
	if got := balances(t, a, ids); got != want {
		t.Fatalf("restored from the snapshot: %s, want %s", got, want)
	}
	a.Close()
	fresh := startNode(t, k, t.TempDir())
	settled(t, fresh)
	if got := balances(t, fresh, ids); got != want {
		t.Fatalf("rebuilt from the changelog: %s, want %s", got, want)
	}
}

// refuseWrite is a kfake control that refuses the first write to the
// changelog (topic, or its id) with INVALID_RECORD, which fails the
// write's records: its outcome is unknown to the writer. It counts the
// writes refused in n.
func refuseWrite(n *atomic.Int32, topic string, id [16]byte) func(kmsg.Request) (kmsg.Response, error, bool) {
	return func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ProduceRequest)
		if len(r.Topics) == 0 || (r.Topics[0].Topic != topic && r.Topics[0].TopicID != id) || !n.CompareAndSwap(0, 1) {
			return nil, nil, false
		}
		return kafkatest.RefusedProduce(r, kerr.InvalidRecord.Code), nil, true
	}
}
