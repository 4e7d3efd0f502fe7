package kafkalog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A round whose records the brokers never acknowledge (a broker's death
// can hold a flush for longer than the transaction lives) ends, with an
// error, once its transaction's timeout passed, although the context it
// runs under has no end: the brokers abort such a transaction anyway,
// and the node's commands must not wait on it. Once the brokers answer
// again the member's next rounds commit.
func TestRoundEndsWithItsTransactionsTimeout(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	appendCommands(t, ctx, c, 0, 1)
	m, err := Join(ctx, c, "a", Handlers{}, kgo.TransactionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if res, err := m.Round(ctx, 10, echo(c, "a", "a")); err != nil || !res.Committed {
		t.Fatalf("first round: %+v, %v", res, err)
	}

	release := make(chan struct{})
	kc.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		kc.SleepControl(func() { <-release })
		return nil, nil, false // then handled as usual
	})
	type result struct {
		res RoundResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := m.RoundWait(ctx, context.Background(), 10, newTestLocal(localCommand(0, "held")), echo(c, "a", "a"))
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		if r.err == nil || r.res.Committed {
			t.Fatalf("round whose records were never acknowledged: %+v, %v; want an error, not committed", r.res, r.err)
		}
	case <-ctx.Done():
		t.Fatal("the round waited for its records past its transaction's timeout")
	}

	close(release)
	for {
		res, err := m.RoundWait(ctx, ctx, 10, newTestLocal(localCommand(0, "after")), echo(c, "a", "a"))
		if err == nil && res.Committed {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no round committed once the brokers answered: %+v, %v", res, err)
		}
	}
	if keys := countKeys(readAll(t, ctx, c, c.ChangelogTopic(), true)); keys["held"] != 0 || keys["after"] != 1 {
		t.Fatalf("committed changelog records %v: want after once, held never", keys)
	}
}

// A round whose End ran out of time once its commit had reached the
// transaction coordinator may have committed, and franz-go rewinds the
// member to the offsets committed before the round all the same: a member
// that went on reading would apply the round's commands again (a
// transfer's credit twice). The member renews its session instead, whose
// offsets the group gives once the transaction ended: each command's
// changelog record commits once.
func TestRoundOfUnknownOutcomeIsNotReadAgain(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	appendCommands(t, ctx, c, 0, 1)
	m, err := Join(ctx, c, "a", Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })

	held, release := make(chan struct{}), make(chan struct{})
	kc.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.(*kmsg.EndTxnRequest).Commit {
			kc.DropControl()
			close(held)
			kc.SleepControl(func() { <-release })
		}
		return nil, nil, false // then handled as usual
	})
	roundCtx, endRound := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		res, err := m.RoundWait(ctx, roundCtx, 10, nil, echo(c, "a", "a"))
		if err == nil || res.Committed || res.Aborted {
			err = fmt.Errorf("round whose commit outlived its context: %+v, %v; want an error, outcome unknown", res, err)
		} else {
			err = nil
		}
		done <- err
	}()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the round never asked for its commit")
	}
	endRound()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(release)
	for countKeys(readAll(t, ctx, c, c.ChangelogTopic(), true))["cmd-0"] == 0 {
		if ctx.Err() != nil {
			t.Fatal("the coordinator never committed the held round")
		}
	}

	appendCommands(t, ctx, c, 1, 1)
	for {
		res, err := m.Round(ctx, 10, echo(c, "a", "a"))
		if err == nil && res.Committed {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no round committed after the one of unknown outcome: %+v, %v", res, err)
		}
	}
	exactlyOnce(t, "committed changelog records", readAll(t, ctx, c, c.ChangelogTopic(), true), 2)
}
