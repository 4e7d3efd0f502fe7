package kafkalog

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// heldRound runs a round of a, which took partition 0 of kc's cluster and
// has cmd-0 to read, while kc holds its write, the only produce from its
// start until the returned release: the round ends with its context, and
// its partition's outcome is Unknown. release lets kc handle the held
// produce as usual, or, with fail, answers it with an error the client
// does not retry and appends nothing; it returns once kc has answered or let the produce go.
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
		return kafkatest.RefusedProduce(req.(*kmsg.ProduceRequest), kerr.InvalidRecord.Code), nil, true
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

// heldWrite is a member's round of unknown outcome (heldRound) on a
// one-partition kfake cluster: the member took the partition, then read
// cmd-0 in the round.
type heldWrite struct {
	ctx     context.Context
	c       Config
	a       *chainNode
	adm     *kadm.Client
	end     int64 // the changelog's end before the round
	release func(fail bool)
}

func newHeldWrite(t *testing.T) *heldWrite {
	t.Helper()
	kc, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	appendCommands(t, ctx, c, 0, 1)
	h := &heldWrite{ctx: ctx, c: c, a: a, adm: kadm.NewClient(newClient(t, c))}
	h.end = h.changelogEnd(t)
	h.release = heldRound(t, ctx, kc, a)
	return h
}

// changelogEnd is the high watermark of the changelog's partition.
func (h *heldWrite) changelogEnd(t *testing.T) int64 {
	t.Helper()
	end, err := listOffset(h.ctx, h.adm.ListEndOffsets, h.c.ChangelogTopic(), 0)
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
	h := newHeldWrite(t)
	h.release(false)
	// The held write is cmd-0's change and its trailer.
	pollUntil(t, h.ctx, func() bool { return h.changelogEnd(t) >= h.end+2 }, "the held write landed")

	roundsUntilApplied(t, h.ctx, h.c, h.a)
	if n := h.a.appliedKeys()["cmd-0"]; n != 0 {
		t.Errorf("cmd-0 applied again %d times after its write of unknown outcome counted", n)
	}
	restoredOnce(t, h.ctx, h.c, 2)
}

// A round whose held write the brokers refuse in the end appended
// nothing: the member's take after it reads no trailer past cmd-0, and its
// rounds apply cmd-0 once more, in a write that counts.
func TestRoundOfUnknownOutcomeThatFailedIsAppliedAgain(t *testing.T) {
	h := newHeldWrite(t)
	h.release(true)
	if got := h.changelogEnd(t); got != h.end {
		t.Fatalf("the changelog's end moved from %d to %d with the held write refused", h.end, got)
	}

	roundsUntilApplied(t, h.ctx, h.c, h.a)
	if n := h.a.appliedKeys()["cmd-0"]; n != 1 {
		t.Errorf("cmd-0 applied %d times after its write was refused, want once", n)
	}
	restoredOnce(t, h.ctx, h.c, 2)
}
