package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// The commands a node queued for its own rounds whose partitions it gives
// up while its round's write is held (a broker's death can hold it) go on
// to their new owner, which answers them: none fails. The member's revoke
// waits for the write under way (its partitions' new owner must restore
// what it wrote), up to the round's timeout, which ends the write as of
// unknown outcome; the queued commands then leave at once, before the
// node's rebuild. Here node a's write is held while a read of an account
// of each partition waits in its queue; node b joins and takes some of
// a's partitions.
func TestQueuedCommandsOfRevokedPartitionsGoToTheirNewOwner(t *testing.T) {
	kc, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 6)
	byPartition := map[int32]string{}
	for _, id := range ids {
		byPartition[int32(engine.ShardIndex(id, fakePartitions))] = id
	}
	if len(byPartition) != fakePartitions {
		t.Fatalf("accounts %v are not on every partition", ids)
	}

	released := holdWrite(t, kc, k, a, ids)
	before := a.local.len()

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
	queued(t, a, before+fakePartitions)

	gen := a.gen.Load()
	b := startNode(t, k, t.TempDir())
	// The write given up, a's state is rebuilt; the write may land then.
	until(t, func() bool { return a.gen.Load() != gen }, func() string { return "a's held write not given up" })
	released()
	moved := owning(t, b)
	for range fakePartitions {
		r := <-reads
		if r.err != nil {
			t.Errorf("the read of partition %d (b took %v): %v", r.p, moved, r.err)
		}
	}
}

// holdWrite holds node a's next write to the changelog until the returned
// function (also called at the test's end, before the nodes close)
// releases it. It starts a transfer between ids[0] and ids[1] and returns
// once the write is held, a's rounds with it, and the transfer is routed:
// the held write may be of a round that was under way (a credit the
// accounts' funding owes), with the transfer queued behind it.
func holdWrite(t *testing.T, kc *kfake.Cluster, k kafkalog.Config, a *testNode, ids []string) func() {
	t.Helper()
	release, held := make(chan struct{}), make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	var holding atomic.Bool // not a sync.Once: the other produces go on
	changelog := topicID(t, k, k.ChangelogTopic())
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, topic := range req.(*kmsg.ProduceRequest).Topics {
			if (topic.Topic == k.ChangelogTopic() || topic.TopicID == changelog) && holding.CompareAndSwap(false, true) {
				close(held)
				kc.SleepControl(func() { <-release })
			}
		}
		return nil, nil, false
	})
	routed := make(chan struct{})
	a.caller.SetLocal(func(p int32, key, value []byte) bool {
		defer close(routed) // the transfer is the one command routed
		return a.route(p, key, value)
	})
	go func() {
		_, _, _ = a.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: "held", From: ids[0], To: ids[1], Amount: 1})
	}()
	<-held
	<-routed
	a.caller.SetLocal(a.route)
	return released
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

// topicID is the id of topic on k.
func topicID(t *testing.T, k kafkalog.Config, topic string) [16]byte {
	t.Helper()
	cl, err := kgo.NewClient(k.Seeds()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ts, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil || ts.Error() != nil {
		t.Fatalf("topic %s: %v %v", topic, err, ts.Error())
	}
	return ts[topic].ID
}
