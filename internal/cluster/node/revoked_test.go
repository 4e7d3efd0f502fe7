package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// The commands a node queued for its own rounds whose partitions it gives
// up while its round is held (a broker's death can hold a round's flush)
// go on at once to their new owner, which answers them: they do not wait
// for the held round, nor fail when their call's time is up. Here node
// a's round is held in its flush (its transaction's timeout is longer than
// a call's) while a read of an account of each partition waits in its
// queue; node b joins and takes some of a's partitions.
func TestQueuedCommandsOfRevokedPartitionsGoToTheirNewOwner(t *testing.T) {
	kc, k := fakeKafka(t)
	long := func(c *Config) { c.TransactionTimeout = time.Minute }
	a := startNode(t, k, t.TempDir(), long)
	settled(t, a)
	ids := accounts(t, a, 6)
	byPartition := map[int32]string{}
	for _, id := range ids {
		byPartition[int32(engine.ShardIndex(id, fakePartitions))] = id
	}
	if len(byPartition) != fakePartitions {
		t.Fatalf("accounts %v are not on every partition", ids)
	}

	release, held := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(func() { close(release) }) // before the nodes close
	txnID := k.TransactionalID(a.ID())
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if id := req.(*kmsg.ProduceRequest).TransactionID; id != nil && *id == txnID {
			select {
			case held <- struct{}{}:
			default:
			}
			kc.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	go func() {
		_, _, _ = a.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: "held", From: ids[0], To: ids[1], Amount: 1})
	}()
	<-held

	type read struct {
		p   int32
		err error
	}
	reads := make(chan read, fakePartitions)
	for p, id := range byPartition {
		go func() {
			_, err := a.Ledger().Account(context.Background(), id)
			reads <- read{p, err}
		}()
	}
	queued(t, a, fakePartitions)

	b := startNode(t, k, t.TempDir())
	moved := owning(t, b)
	for range moved {
		r := <-reads
		if !slices.Contains(moved, r.p) {
			t.Fatalf("the read of partition %d, which a kept, was answered while a's round was held: %v", r.p, r.err)
		}
		if r.err != nil {
			t.Fatalf("the read of partition %d, which b took: %v", r.p, r.err)
		}
	}
}

// queued waits until node a's queue holds n commands.
func queued(t *testing.T, a *testNode, n int) {
	t.Helper()
	got := 0
	until(t, func() bool {
		a.local.mu.Lock()
		got = len(a.local.cmds)
		a.local.mu.Unlock()
		return got == n
	}, func() string { return fmt.Sprintf("%d commands queued, want %d", got, n) })
}

// owning waits until node n serves partitions, and returns them.
func owning(t *testing.T, n *testNode) []int32 {
	t.Helper()
	var owned []int32
	until(t, func() bool {
		owned = n.Owned()
		return len(owned) > 0 && n.Ready() && n.built.Load() == n.gen.Load()
	}, func() string { return "node serves no partition" })
	return owned
}
