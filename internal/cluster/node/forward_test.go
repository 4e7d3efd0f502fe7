package node

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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

	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	changelog := topicID(t, k, k.ChangelogTopic())
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, topic := range req.(*kmsg.ProduceRequest).Topics {
			for _, part := range topic.Partitions {
				if (topic.Topic == k.ChangelogTopic() || topic.TopicID == changelog) && part.Partition == pd {
					once.Do(func() { // the credit's write
						close(held)
						kc.SleepControl(func() { <-release })
					})
				}
			}
		}
		return nil, nil, false
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
