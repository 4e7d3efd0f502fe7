package kafkalog

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Commands appended at once travel packed, and rounds read them: never
// more than their max but for the rest of a record, each command once and
// in its appender's order.
func TestPackedRoundsKeepMaxAndOrder(t *testing.T) {
	const appenders, each, most = 16, 100, 2 * PackMax
	ctx, c := newCluster(t, 1)
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range each {
				key := fmt.Appendf(nil, "cmd-%d", a*each+i)
				if _, err := p.Append(ctx, 0, key, key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	a := joinChain(t, c, "a")
	next := make([]int, appenders)
	applied, packed := 0, false
	for applied < appenders*each {
		var batch []Command
		res, err := a.m.RoundWait(ctx, ctx, most, nil, func(ctx context.Context, b []Command) ([]Output, error) {
			batch = b
			for i, cmd := range b {
				packed = packed || i > 0 && cmd.Offset == b[i-1].Offset
				var n int
				if _, err := fmt.Sscanf(string(cmd.Key), "cmd-%d", &n); err != nil || n%each != next[n/each] {
					t.Fatalf("command %s applied after %d of its appender's", cmd.Key, next[n/each])
				}
				next[n/each]++
			}
			applied += len(b)
			return a.apply(ctx, b)
		})
		if err != nil {
			t.Fatal(err)
		}
		// A round whose poll found only a transient error reads nothing
		// and writes nothing; every round that read commands counts.
		if res.Commands > most+PackMax-1 || !res.Counted() {
			t.Fatalf("round %+v after %d commands: want at most %d commands, counted", res, applied, most+PackMax-1)
		}
		a.record(res, batch)
	}
	if !packed {
		t.Error("no record carried several commands")
	}
	exactlyOnceApplied(t, appenders*each, a)
}
