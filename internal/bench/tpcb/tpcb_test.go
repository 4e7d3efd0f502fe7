package tpcb

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/surge-dev/surge/internal/bench/report"
)

func TestDrawStaysInPgbenchRanges(t *testing.T) {
	c := DefaultConfig()
	c.Scale, c.Accounts, c.DeltaMax = 2, 30, 3
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[int64]bool{}
	for range 2000 {
		x := c.draw(r)
		if x.aid < 1 || x.aid > 30 || x.tid < 1 || x.tid > 20 || x.bid < 1 || x.bid > 2 || x.delta == 0 || x.delta < -3 || x.delta > 3 {
			t.Fatalf("draw %+v out of range", x)
		}
		seen[x.delta] = true
	}
	if len(seen) != 6 {
		t.Errorf("deltas drawn %v, want all of ±1..3", seen)
	}
	// The same seed draws the same mix: what makes the two targets' turns
	// the same transactions.
	a, b := rand.New(rand.NewPCG(5, 0)), rand.New(rand.NewPCG(5, 0))
	for range 100 {
		if x, y := c.draw(a), c.draw(b); x != y {
			t.Fatalf("same seed drew %+v and %+v", x, y)
		}
	}
}

func TestCompareRatiosPerPair(t *testing.T) {
	rep := &report.TPCBReport{Turns: []report.TPCBTurn{
		{Target: Surge, TPS: 100}, {Target: PostgreSQL, TPS: 50},
		{Target: Surge, TPS: 90}, {Target: PostgreSQL, TPS: 10},
		{Target: Surge, TPS: 120}, {Target: PostgreSQL, TPS: 40},
	}}
	compare(rep)
	if want := (report.Spread{Median: 100, Min: 90, Max: 120, N: 3}); rep.Surge != want {
		t.Errorf("surge %+v, want %+v", rep.Surge, want)
	}
	if want := (report.Spread{Median: 40, Min: 10, Max: 50, N: 3}); !reflect.DeepEqual(rep.PostgreSQL, &want) {
		t.Errorf("postgresql %+v, want %+v", rep.PostgreSQL, want)
	}
	// Ratios pair each turn with the one right after it: 2, 9, 3.
	if want := (report.Spread{Median: 3, Min: 2, Max: 9, N: 3}); !reflect.DeepEqual(rep.Ratio, &want) {
		t.Errorf("ratio %+v, want %+v", rep.Ratio, want)
	}
	if v := verdict(rep); v == nil || v.Pass {
		t.Errorf("verdict %+v: a median ratio of 3 misses 10", v)
	}
	surgeOnly := &report.TPCBReport{Turns: []report.TPCBTurn{{Target: Surge, TPS: 7}}}
	compare(surgeOnly)
	if surgeOnly.PostgreSQL != nil || surgeOnly.Ratio != nil || verdict(surgeOnly) != nil {
		t.Errorf("surge alone got a comparison: %+v", surgeOnly)
	}
}

func TestAtomicBatchMovesEachLegByTheDelta(t *testing.T) {
	s := &surgeTarget{cfg: DefaultConfig()}
	got := string(s.appendBatch(nil, txn{aid: 3, tid: 2, bid: 1, delta: -7}))
	want := `{"atomic":true,"transfers":[{"from":"tpcb-a3","to":"@world","amount":7},` +
		`{"from":"tpcb-t2","to":"@world","amount":7},{"from":"tpcb-b1","to":"@world","amount":7}]}`
	if got != want {
		t.Errorf("batch\n got %s\nwant %s", got, want)
	}
}

func TestConsistencyText(t *testing.T) {
	if got := consistencyText(5, 5, 5); got != "ok: every sum is 5" {
		t.Errorf("equal sums: %q", got)
	}
	if got := consistencyText(5, 4); got != "BROKEN: sums [5 4] differ" {
		t.Errorf("unequal sums: %q", got)
	}
}
