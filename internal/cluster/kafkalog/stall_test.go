package kafkalog

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldRound runs a round of a, which took partition 0 of kc's cluster and
// has cmd-0 to read, while kc holds its write, the only produce from its
// start until the returned release: the round ends with its context, and
// its partition's outcome is Unknown. release lets kc handle the held
// produce as usual, or, with fail, answers it with an error and appends
// nothing; it returns once kc has answered or let the produce go.
func heldRound(t *testing.T, ctx context.Context, kc *kfake.Cluster, a *chainNode) (release func(fail bool)) {
	t.Helper()
	held, freed, answered := make(chan struct{}), make(chan bool, 1), make(chan struct{})
	var once sync.Once
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		first := false
		once.Do(func() { first = true; close(held) })
		if !first {
			return nil, nil, false
		}
		var fail bool
		kc.SleepControl(func() { fail = <-freed })
		defer close(answered)
		if !fail {
			return nil, nil, false // handled as usual
		}
		return refusedProduce(req.(*kmsg.ProduceRequest)), nil, true
	})
	roundCtx, endRound := context.WithCancel(ctx)
	go func() {
		select {
		case <-held:
		case <-ctx.Done():
		}
		endRound()
	}()
	res, err := a.round(ctx, roundCtx)
	if err != nil || len(res.Partitions) != 1 || res.Partitions[0].Result != Unknown {
		t.Fatalf("round whose write outlived its context: %+v, %v; want partition 0 unknown", res, err)
	}
	if owned := a.m.Owned(); len(owned) != 0 {
		t.Fatalf("a writes %v after a write of unknown outcome", owned)
	}
	return func(fail bool) {
		freed <- fail
		awaitClosed(t, ctx, answered, "the held produce answered")
	}
}

// refusedProduce answers req with an error that is not retried for each
// of its partitions.
func refusedProduce(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.InvalidRecord.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// unknownRoundMember is a member of a one-partition kfake cluster that took
// the partition, with cmd-0 appended.
func unknownRoundMember(t *testing.T) (*kfake.Cluster, context.Context, Config, *chainNode) {
	t.Helper()
	kc, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	appendCommands(t, ctx, c, 0, 1)
	return kc, ctx, c, a
}

// changelogEnd is the high watermark of partition 0 of c's changelog, as
// adm lists it.
func changelogEnd(t *testing.T, ctx context.Context, adm *kadm.Client, c Config) int64 {
	t.Helper()
	end, err := listOffset(ctx, adm.ListEndOffsets, c.ChangelogTopic(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// roundsUntilApplied runs a's rounds until they applied cmd-1, appended
// first.
func roundsUntilApplied(t *testing.T, ctx context.Context, c Config, a *chainNode) {
	t.Helper()
	appendCommands(t, ctx, c, 1, 1)
	for a.appliedKeys()["cmd-1"] == 0 {
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A round whose write the brokers do not acknowledge (a broker's death can
// hold a produce for long) ends with its context: its partition's outcome
// is Unknown, and the member takes the partition again before its next
// round, from what the log holds. The held write lands before that take:
// it counts, its trailer says cmd-0 was read, and the member's rounds go
// on past it without applying cmd-0 again. Each command's change counts
// once in the log.
func TestRoundOfUnknownOutcomeIsNotAppliedTwice(t *testing.T) {
	kc, ctx, c, a := unknownRoundMember(t)
	adm := kadm.NewClient(newClient(t, c))
	end := changelogEnd(t, ctx, adm, c)
	release := heldRound(t, ctx, kc, a)
	release(false)
	// The held write is cmd-0's change and its trailer.
	pollUntil(t, ctx, func() bool { return changelogEnd(t, ctx, adm, c) >= end+2 }, "the held write landed")

	roundsUntilApplied(t, ctx, c, a)
	if n := a.appliedKeys()["cmd-0"]; n != 0 {
		t.Errorf("cmd-0 applied again %d times after its write of unknown outcome counted", n)
	}
	restoredOnce(t, ctx, c, 2)
}

// A round whose held write the brokers refuse in the end appended
// nothing: the member's take after it reads no trailer past cmd-0, and its
// rounds apply cmd-0 once more, in a write that counts.
func TestRoundOfUnknownOutcomeThatFailedIsAppliedAgain(t *testing.T) {
	kc, ctx, c, a := unknownRoundMember(t)
	adm := kadm.NewClient(newClient(t, c))
	end := changelogEnd(t, ctx, adm, c)
	release := heldRound(t, ctx, kc, a)
	release(true)
	if got := changelogEnd(t, ctx, adm, c); got != end {
		t.Fatalf("the changelog's end moved from %d to %d with the held write refused", end, got)
	}

	roundsUntilApplied(t, ctx, c, a)
	if n := a.appliedKeys()["cmd-0"]; n != 1 {
		t.Errorf("cmd-0 applied %d times after its write was refused, want once", n)
	}
	restoredOnce(t, ctx, c, 2)
}
