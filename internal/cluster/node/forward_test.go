package node

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
)

// A transfer between two partitions the node writes is applied exactly
// once across a rebuild. The debit's write owes the credit as a forward,
// which the node sends to its own rounds once that write counts; the
// credit's write is held until the round gives it up as of unknown
// outcome, the node rebuilds its state and takes the partition again, and
// the forward, sent again, is judged with the book the take restored:
// applied if the held write did not count, a duplicate if it landed and
// counted. Either way the credit is applied once and the source owes
// nothing once it is acknowledged.
func TestTransferBetweenOwnPartitionsIsAppliedOnceAcrossARebuild(t *testing.T) {
	kc, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir(), func(c *Config) { c.RoundTimeout = time.Second })
	settled(t, a)
	ids := accounts(t, a, 6)
	var src, dst string
	for _, id := range ids {
		switch p := engine.ShardIndex(id, fakePartitions); {
		case src == "":
			src = id
		case dst == "" && p != engine.ShardIndex(src, fakePartitions):
			dst = id
		}
	}
	ps, pd := int32(engine.ShardIndex(src, fakePartitions)), int32(engine.ShardIndex(dst, fakePartitions))
	owesNothing(t, a)

	held := make(chan struct{})
	var once sync.Once
	released := holdWrites(t, kc, k, pd, func() bool { // the credit's write
		first := false
		once.Do(func() { close(held); first = true })
		return first
	})
	gen := a.gen.Load()
	transfer(t, a, "across", src, dst, 5)
	<-held
	until(t, func() bool { return a.gen.Load() != gen }, func() string { return "no rebuild after the held write" })
	released()

	owesNothing(t, a)
	if got, want := balances(t, a, []string{src, dst}), fmt.Sprintf("%s=995 %s=1005 ", src, dst); got != want {
		t.Fatalf("after the transfer from partition %d to %d: %s, want %s", ps, pd, got, want)
	}
}

// owesNothing waits until no partition node n writes owes a forward: each
// was applied and acknowledged.
func owesNothing(t *testing.T, n *testNode) {
	t.Helper()
	var owed []int32
	until(t, func() bool {
		owed = nil
		for _, p := range n.Owned() {
			if b, ok := n.owner.Book(p); ok && len(b.Owed()) > 0 {
				owed = append(owed, p)
			}
		}
		return len(owed) == 0 && len(n.Owned()) == fakePartitions
	}, func() string { return fmt.Sprintf("partitions %v owe forwards", owed) })
}

// holdWrites holds each produce request that writes partition p of k's
// changelog, if hold says so, until the returned release is called (at
// the latest as the test ends).
func holdWrites(t *testing.T, kc *kfake.Cluster, k kafkalog.Config, p int32, hold func() bool) (release func()) {
	t.Helper()
	released := make(chan struct{})
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	changelog := topicID(t, k, k.ChangelogTopic())
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if producesTo(req, k.ChangelogTopic(), changelog, p) && hold() {
			kc.SleepControl(func() { <-released })
		}
		return nil, nil, false
	})
	return release
}

// producesTo reports whether produce request req writes partition p of
// topic, named or by its id.
func producesTo(req kmsg.Request, topic string, id [16]byte, p int32) bool {
	for _, rt := range req.(*kmsg.ProduceRequest).Topics {
		for _, part := range rt.Partitions {
			if (rt.Topic == topic || rt.TopicID == id) && part.Partition == p {
				return true
			}
		}
	}
	return false
}
