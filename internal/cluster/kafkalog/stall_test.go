package kafkalog

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A round whose write the brokers do not acknowledge (a broker's death can
// hold a produce for long) ends with its context: its partition's outcome
// is Unknown, and the member takes the partition again before its next
// round, from what the log holds, wherever the held write landed. Once
// the brokers answer, the member's rounds count again and each command's
// change counts once in the log.
func TestRoundOfUnknownOutcomeIsNotAppliedTwice(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	appendCommands(t, ctx, c, 0, 1)

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	// The round's write is the only produce from here until release.
	kc.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		once.Do(func() { close(held) })
		kc.SleepControl(func() { <-release })
		return nil, nil, false // then handled as usual
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
	close(release)

	appendCommands(t, ctx, c, 1, 1)
	for a.appliedKeys()["cmd-1"] == 0 {
		if _, err := a.round(ctx, ctx); err != nil {
			t.Fatal(err)
		}
	}
	restoredOnce(t, ctx, c, 2)
}
