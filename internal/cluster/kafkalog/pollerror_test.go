package kafkalog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A poll can return one partition's commands beside another partition's
// error. The commands are consumed once polled: a round that dropped them
// for the error would never see them again, and the position its
// partition's next write records would skip them. Here partition 1's
// broker refuses every fetch (an error the client does not get over by
// itself) while partition 0's command waits polled; once the refusals
// stop, each command's change counts exactly once in the log.
func TestCommandsPolledBesideAnErrorAreApplied(t *testing.T) {
	kc, ctx, c := fakeBrokers(t, 2, 2)
	refusing := kc.LeaderFor(c.CommandsTopic(), 0) + 1
	if err := kc.MoveTopicPartition(c.CommandsTopic(), 1, refusing%2); err != nil {
		t.Fatal(err)
	}
	refusing %= 2
	// The changelog's partitions stay with the broker that answers, so
	// that the member's takes restore them.
	for p := range c.Partitions {
		if err := kc.MoveTopicPartition(c.ChangelogTopic(), p, 1-refusing); err != nil {
			t.Fatal(err)
		}
	}
	appendCommands(t, ctx, c, 1, 1) // cmd-1, to partition 1

	polled, refused := make(chan struct{}), make(chan struct{})
	var once [2]sync.Once
	var refuse atomic.Bool
	refuse.Store(true)
	kc.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if kc.CurrentNode() != refusing || !refuse.Load() {
			return nil, nil, false
		}
		once[1].Do(func() { close(refused) })
		return refusedFetch(r.(*kmsg.FetchRequest)), nil, true
	})

	read := batchRead(func(p int32) {
		if p == 0 {
			once[0].Do(func() { close(polled) })
		}
	})
	a := joinChainWith(t, c, "a", nil, nil, kgo.WithHooks(read))
	// cmd-0 is appended only once partition 1's refusal was sent, so that
	// the refusal is in the client's hands before cmd-0 is: the round's
	// poll then returns both.
	awaitClosed(t, ctx, refused, "partition 1's broker never refused a fetch")
	appendCommands(t, ctx, c, 0, 1)
	awaitClosed(t, ctx, polled, "the member never read partition 0's command")
	if _, err := a.round(ctx, ctx); err != nil {
		t.Logf("round beside the refused partition: %v", err)
	}
	refuse.Store(false)
	for !readThrough(a, c, 2) {
		wait, stop := context.WithTimeout(ctx, time.Second)
		_, err := a.round(wait, ctx)
		stop()
		if ctx.Err() != nil {
			t.Fatalf("the member's writes never read both partitions' commands: %v", err)
		}
	}
	restoredOnce(t, ctx, c, 2)
}

// awaitClosed waits until ch is closed, or fails t with what.
func awaitClosed(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal(what)
	}
}

// batchRead tells of each record batch the client reads, by partition.
type batchRead func(partition int32)

func (f batchRead) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, p int32, _ kgo.FetchBatchMetrics) {
	f(p)
}

// refusedFetch answers every partition req fetches with
// TOPIC_AUTHORIZATION_FAILED, an error the client reports and does not
// retry by itself.
func refusedFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
