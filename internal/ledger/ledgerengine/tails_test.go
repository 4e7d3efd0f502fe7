package ledgerengine

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
	"github.com/surge-dev/surge/internal/store"
)

// TestTailRecordsRecovery reopens a ledger whose tail records and marks
// are as it wrote them: recovery reads them instead of the chunks, and
// every balance, entry count and history is what it was.
func TestTailRecordsRecovery(t *testing.T) {
	c := openCheckpointLedger(t)
	c.traffic("before")
	c.checkpoint()
	c.traffic("after")
	balances := c.balances()
	c.reopen()
	if !c.e.tailsRead {
		t.Fatal("recovery did not read the tail records")
	}
	c.wantAllKnown(balances)
	c.wantHistories()
	c.traffic("reopened")
	balances = c.balances()
	c.reopen()
	if !c.e.tailsRead {
		t.Fatal("recovery did not read the tail records after more traffic")
	}
	c.wantAllKnown(balances)
	c.wantHistories()
}

// TestTailRecordsNotTrusted reopens ledgers whose tail records cannot be
// trusted: one account's tail record is stale (as a surge that does not
// write them would leave it) and the marks do not match the journal. If
// recovery read the stale record, that account's balance and history
// would be wrong. It must read the chunks instead, write the records and
// marks again, and use them at the next start.
func TestTailRecordsNotTrusted(t *testing.T) {
	for name, marks := range map[string]func(epoch uint64, next map[int]uint64) (uint64, map[int]uint64){
		"journal past the marks": func(epoch uint64, next map[int]uint64) (uint64, map[int]uint64) {
			for s := range next {
				next[s]--
			}
			return epoch, next
		},
		"another epoch": func(epoch uint64, next map[int]uint64) (uint64, map[int]uint64) { return epoch + 2, next },
		"no marks":      func(epoch uint64, _ map[int]uint64) (uint64, map[int]uint64) { return epoch, nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := openCheckpointLedger(t)
			c.traffic("before")
			c.checkpoint()
			c.traffic("after")
			balances := c.balances()
			closeEngine(t, c.e)
			c.e = nil
			withStore(t, c.dir, func(db ledgerstore.Store, w *ledgerstore.LedgerBatch) {
				js, err := db.JournalState()
				if err != nil {
					t.Fatal(err)
				}
				next, err := db.JournalNext(js)
				if err != nil || len(next) == 0 {
					t.Fatalf("JournalNext: %v %v", next, err)
				}
				epoch, next := marks(js.Epoch, next)
				w.PutTails(map[string]ledgerstore.Tail{c.accounts[0]: {Seq: 1, Balance: 7}}, epoch, next)
			})
			c.reopen()
			if c.e.tailsRead {
				t.Fatal("recovery read tail records whose marks do not match the journal")
			}
			c.wantAllKnown(balances)
			c.wantHistories()
			c.reopen()
			if !c.e.tailsRead {
				t.Fatal("recovery did not write the tail records again")
			}
			c.wantAllKnown(balances)
			c.wantHistories()
		})
	}
}

// TestTailRecordDamaged refuses to open a ledger whose tail record is not
// one, naming the account, rather than guess its balance.
func TestTailRecordDamaged(t *testing.T) {
	c := openCheckpointLedger(t)
	c.traffic("before")
	closeEngine(t, c.e)
	c.e = nil
	withStore(t, c.dir, func(_ ledgerstore.Store, w *ledgerstore.LedgerBatch) {
		_ = w.Set([]byte("lc/"+c.accounts[1]), []byte{0xff}, nil)
	})
	eng, err := engine.Open(engine.Config{Dir: c.dir, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	_, err = Open(eng, Config{})
	if err == nil || !strings.Contains(err.Error(), c.accounts[1]) {
		t.Fatalf("Open over a damaged tail record: %v, want an error naming %s", err, c.accounts[1])
	}
}

// withStore commits what fn writes to the ledger's store in dir, closed.
func withStore(t *testing.T, dir string, fn func(ledgerstore.Store, *ledgerstore.LedgerBatch)) {
	t.Helper()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := ledgerstore.Store{Store: s}
	w := ledgerstore.NewLedgerBatch(db.NewBatch())
	fn(db, w)
	if err := db.Commit(w.Batch); err != nil {
		t.Fatal(err)
	}
}

// wantHistories checks every account's whole history: its entry count of
// entries, numbered down to 1 without a gap or a repeat, each balance the
// one before it plus the entry's amount, the newest the account's balance.
func (c *checkpointLedger) wantHistories() {
	t := c.t
	for _, id := range append([]string{ledger.WorldID}, c.accounts...) {
		a := balance(t, c.e, id)
		var all []ledger.Entry
		for q := (ledger.HistoryQuery{Limit: ledger.MaxPageSize}); ; {
			page, err := c.e.History(ctx, id, q)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page.Entries...)
			if q.Cursor = page.NextCursor; q.Cursor == 0 {
				break
			}
		}
		if uint64(len(all)) != a.Entries || len(all) == 0 || all[0].BalanceAfter != a.Balance {
			t.Fatalf("%s: %d history entries for %d, newest %+v, balance %d", id, len(all), a.Entries, all[0], a.Balance)
		}
		for i, e := range all {
			before := int64(0)
			if i+1 < len(all) {
				before = all[i+1].BalanceAfter
			}
			amount := e.Amount
			if e.Direction == ledger.Debit {
				amount = -amount
			}
			if e.Seq != a.Entries-uint64(i) || e.BalanceAfter != before+amount {
				t.Fatalf("%s: entry %d of %d is %+v after balance %d", id, i, len(all), e, before)
			}
		}
	}
}

// discardRounds is a Committer that keeps nothing: the rounds of a
// cluster's owner without Kafka.
type discardRounds struct{}

func (discardRounds) Commit(*engine.Round) error { return nil }

// TestClusterChunksWriteNoTails: a cluster's owner loads its accounts from
// their chunks (its cache is rebuilt from changelogs), so its chunks go
// without tail records, each of which would cost a key in the cache, in
// the node's local copy and in the changelog. A single node's chunks keep
// theirs.
func TestClusterChunksWriteNoTails(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		eng, err := engine.Open(engine.Config{Dir: t.TempDir(), Shards: 2, Commit: committerIf(cluster), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(eng, Config{Cluster: cluster, SweepEntries: 16, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		eng.Start()
		ids := namesOn(l, 0, 2, "tail")
		for _, id := range ids {
			mustOpenAccount(t, l, id, ledger.MaxAmount)
		}
		for i := range 3 * chunkEntries {
			mustTransfer(t, l, ledger.TransferRequest{ID: fmt.Sprint("t", i), From: ids[0], To: ids[1], Amount: 1})
		}
		chunks := 0
		lower := []byte("lh/" + ids[0] + "\x00")
		err = l.db.Scan(lower, store.UpperBound(lower), false, func(_, _ []byte) (bool, error) { chunks++; return true, nil })
		if err != nil || chunks == 0 {
			t.Fatalf("cluster %v: %d chunks of %s, %v; want some", cluster, chunks, ids[0], err)
		}
		c, err := l.db.TailCursor()
		if err != nil {
			t.Fatal(err)
		}
		_, found, err := c.Tail(ids[0])
		_ = c.Close()
		if err != nil || found == cluster {
			t.Errorf("cluster %v: tail record of %s found %v (%v), want %v", cluster, ids[0], found, err, !cluster)
		}
		l.Close()
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// committerIf is discardRounds in a cluster, no Committer otherwise.
func committerIf(cluster bool) engine.Committer {
	if cluster {
		return discardRounds{}
	}
	return nil
}
