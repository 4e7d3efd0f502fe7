package kafkalog

import (
	"context"
	"strconv"
	"testing"
)

// Rounds after a busy one gather more commands, never more than their max,
// each command once and in its partition's order.
func TestBusyRoundsKeepMaxAndOrder(t *testing.T) {
	const n, max = 300, 40
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	m := join(t, ctx, c, "a", Handlers{})
	var applied []string
	for len(applied) < n {
		res, err := m.Round(ctx, max, func(ctx context.Context, batch []Command) ([]Output, error) {
			for _, cmd := range batch {
				applied = append(applied, string(cmd.Key))
			}
			return echo(c, "a", "a")(ctx, batch)
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Commands > max || !res.Committed {
			t.Fatalf("round %+v after %d commands: want at most %d commands, committed", res, len(applied), max)
		}
	}
	for i, k := range applied {
		if want := "cmd-" + strconv.Itoa(i); k != want {
			t.Fatalf("command %d applied was %s, want %s", i, k, want)
		}
	}
	exactlyOnce(t, "committed replies", readAll(t, ctx, c, c.RepliesTopic(), true), n)
}
