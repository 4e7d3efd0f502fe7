package engine

import (
	"reflect"
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
)

// TestHistoryCacheAgreesWithStorage reads pages (newest, by cursor, by
// offset, across the cached run's edge) between batches of new transfers
// and checks each against a direct storage read: the cache serves the
// newest page once read, and never an outdated one.
func TestHistoryCacheAgreesWithStorage(t *testing.T) {
	e := openEngine(t, Config{Dir: t.TempDir(), Shards: 2})
	mustOpenAccount(t, e, "a", 0)
	n := 0
	transfers := func(k int) {
		for range k {
			n++
			mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "a", Amount: int64(n), Memo: "m"})
		}
	}
	check := func(q ledger.HistoryQuery) ledger.HistoryPage {
		t.Helper()
		page, err := e.History(ctx, "a", q)
		if err != nil {
			t.Fatal(err)
		}
		acct, _ := e.account("a")
		before := acct.Entries + 1
		switch {
		case q.Cursor > 0:
			before = min(q.Cursor, before)
		default:
			before -= min(q.Offset, before-1)
		}
		want, err := e.db.History("a", before, q.Limit)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(page.Entries, want) && len(page.Entries)+len(want) > 0 {
			t.Fatalf("History(%+v) = %v, storage has %v", q, seqsOf(page.Entries), seqsOf(want))
		}
		return page
	}

	transfers(30)
	first := check(ledger.HistoryQuery{Limit: 10})
	if _, hit := e.history.page("a", 21, 31); !hit {
		t.Fatal("the newest page was not kept")
	}
	check(ledger.HistoryQuery{Limit: 10})                              // from the cache
	check(ledger.HistoryQuery{Limit: 5, Cursor: first.Entries[4].Seq}) // inside the run
	check(ledger.HistoryQuery{Limit: 10, Cursor: first.NextCursor})    // below it
	check(ledger.HistoryQuery{Limit: 10, Offset: 5})                   // across its edge
	transfers(3)
	if got := check(ledger.HistoryQuery{Limit: 10}); got.Entries[0].Seq != 33 {
		t.Fatalf("newest page after 3 more transfers starts at %d, want 33", got.Entries[0].Seq)
	}
	check(ledger.HistoryQuery{Limit: 100, Offset: 29})
	check(ledger.HistoryQuery{Limit: 10, Cursor: 1})
}

func seqsOf(es []ledger.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}
