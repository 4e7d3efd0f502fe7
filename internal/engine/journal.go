package engine

import (
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// History is written as one journal record per shard batch and later as
// one chunk per run of an account's entries (store/history.go). These two
// numbers bound what the journal and the accounts' Recent entries hold.
const (
	// chunkEntries is the size at which an account's Recent entries are
	// stored as a chunk, so that a page of history spans few chunks.
	chunkEntries = 64
	// defaultSweepEntries is how many entries the shards write, together,
	// while a sweep visits every account once. Recent entries in memory
	// (about 100 bytes each) and the journal stay under about twice this:
	// at 2^18, 43 MB of live heap after a 30 s single-transfer run over
	// 50,000 accounts (70 MB at 2^19), with chunks of about 5 entries.
	defaultSweepEntries = 1 << 18
)

// historyWriter is a shard's state for writing history.
type historyWriter struct {
	// next numbers the shard's next journal record.
	next uint64
	// cursor is the next account the sweep visits, in the Book's order;
	// every account visited since the round began at roundStart has its
	// entries of earlier batches in chunks. owed counts the sweep's debt:
	// each entry written buys accounts/(SweepEntries/shards) visits.
	cursor     int
	roundStart uint64
	owed       int
}

// writeHistory adds to w the journal record of the shard's batch and the
// chunks it is due, trimming the journal after each whole sweep.
func (s *shard) writeHistory(w *store.LedgerBatch) {
	ch := s.book.Changes()
	if len(ch.Entries) == 0 {
		return
	}
	h := &s.history
	w.PutJournal(s.id, h.next, ch.Entries)
	h.next++
	for _, a := range ch.Accounts {
		if len(a.Recent) >= chunkEntries {
			storeChunk(w, a)
		}
	}
	accounts := s.book.Accounts()
	perRound := max(1, s.eng.cfg.SweepEntries/len(s.eng.shards))
	for h.owed += len(ch.Entries) * len(accounts); h.owed >= perRound; h.owed -= perRound {
		if h.cursor == len(accounts) {
			w.TrimJournal(s.id, h.roundStart)
			// Visits from this batch on chunk its entries too.
			h.cursor, h.roundStart = 0, h.next
		}
		if a := accounts[h.cursor]; len(a.Recent) > 0 {
			storeChunk(w, a)
		}
		h.cursor++
	}
}

// storeChunk moves a's Recent entries into a chunk.
func storeChunk(w *store.LedgerBatch, a *ledger.Account) {
	w.PutChunk(a.ID, a.Recent)
	// A new slice, not a.Recent[:0]: published copies of a still read
	// the old array.
	a.Recent = nil
}

// replayJournal puts the journaled entries back into their accounts, then
// stores them all as chunks and empties the journal, so that every shard
// starts from journal record 0 whatever the number of shards was before.
func (e *Engine) replayJournal() error {
	replayed := 0
	err := e.db.EachJournalEntry(func(en *ledger.AccountEntry) error {
		replayed++
		return e.shardFor(en.Account).book.Replay(en)
	})
	if err != nil || replayed == 0 {
		return err
	}
	w := store.NewLedgerBatch(e.db.NewBatch())
	for _, s := range e.shards {
		for _, a := range s.book.Accounts() {
			if len(a.Recent) > 0 {
				storeChunk(w, a)
			}
		}
	}
	w.ClearJournal()
	e.cfg.Logger.Info("replayed the history journal", "entries", replayed)
	return e.db.Commit(w.Batch)
}
