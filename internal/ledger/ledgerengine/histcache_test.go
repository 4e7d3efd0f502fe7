package ledgerengine

import (
	"reflect"
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
)

// TestHistoryPages reads pages (newest, by cursor, by offset, across the
// edge between Recent entries and chunks, and across the cached run's
// edge) between batches of new transfers and checks each against the
// entries the transfers must have made: the newest entries come from
// memory, the older from storage or the cache, and the cache never serves
// an outdated page.
func TestHistoryPages(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
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
		before := uint64(n) + 1
		switch {
		case q.Cursor > 0:
			before = min(q.Cursor, before)
		default:
			before -= min(q.Offset, before-1)
		}
		var want []uint64
		for seq := before - 1; seq > 0 && len(want) < q.Limit; seq-- {
			want = append(want, seq)
		}
		if !reflect.DeepEqual(seqsOf(page.Entries), want) && len(page.Entries)+len(want) > 0 {
			t.Fatalf("History(%+v) = %v, want %v", q, seqsOf(page.Entries), want)
		}
		for _, en := range page.Entries {
			// Transfer k credits k, so the balance after it is 1+2+...+k.
			k := int64(en.Seq)
			if en.Amount != k || en.BalanceAfter != k*(k+1)/2 || en.Direction != ledger.Credit || en.Memo != "m" {
				t.Fatalf("History(%+v): entry %+v", q, en)
			}
		}
		return page
	}

	transfers(2*chunkEntries + 22) // two chunks, then 22 Recent entries
	stored := uint64(2 * chunkEntries)
	check(ledger.HistoryQuery{Limit: 10}) // Recent only
	first := check(ledger.HistoryQuery{Limit: 30})
	if _, hit := e.history.page("a", stored-7, stored+1); !hit {
		t.Fatal("the newest stored entries were not kept")
	}
	check(ledger.HistoryQuery{Limit: 30})                               // from the cache
	check(ledger.HistoryQuery{Limit: 5, Cursor: first.Entries[24].Seq}) // inside the run
	check(ledger.HistoryQuery{Limit: 10, Cursor: first.NextCursor})     // below it
	check(ledger.HistoryQuery{Limit: 10, Offset: 25})                   // across its edge
	transfers(3)
	if got := check(ledger.HistoryQuery{Limit: 10}); got.Entries[0].Seq != uint64(n) {
		t.Fatalf("newest page after 3 more transfers starts at %d, want %d", got.Entries[0].Seq, n)
	}
	transfers(chunkEntries) // a third chunk
	check(ledger.HistoryQuery{Limit: 100, Offset: 29})
	check(ledger.HistoryQuery{Limit: 100, Cursor: stored + 5})
	check(ledger.HistoryQuery{Limit: 10, Cursor: 1})
}

func seqsOf(es []ledger.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}
