package ledgerengine

import (
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
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
	// (about 40 bytes each, encoded) and the journal stay under about
	// twice this. Over 50,000 accounts, chunks hold about 20 entries; a
	// sweep of 2^18 made chunks of 5, and the random chunk keys cost 13%
	// more CPU per transfer in BenchmarkBatch8190Accounts50k. Live heap
	// after a 30 s single-transfer run: 66 MB.
	defaultSweepEntries = 1 << 20
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
func (s *shard) writeHistory(w *ledgerstore.LedgerBatch) {
	ch := s.book.Changes()
	if ch.JournalEntries == 0 {
		return
	}
	h := &s.history
	w.PutJournal(s.id, h.next, ch.JournalEntries, ch.Journal)
	h.next++
	for _, a := range ch.Accounts {
		if a.Recent.Len() >= chunkEntries {
			storeChunk(w, a)
		}
	}
	accounts := s.book.Accounts()
	perRound := max(1, s.l.cfg.SweepEntries/len(s.l.shards))
	for h.owed += ch.JournalEntries * len(accounts); h.owed >= perRound; h.owed -= perRound {
		if h.cursor == len(accounts) {
			w.TrimJournal(s.id, h.roundStart)
			// Visits from this batch on chunk its entries too.
			h.cursor, h.roundStart = 0, h.next
		}
		if a := accounts[h.cursor]; a.Recent.Len() > 0 {
			storeChunk(w, a)
		}
		h.cursor++
	}
}

// storeChunk moves a's Recent entries into a chunk.
func storeChunk(w *ledgerstore.LedgerBatch, a *ledger.Account) {
	w.PutChunk(a.ID, a.Entries, a.Recent)
	// A new log, not the old one emptied: published copies of a still
	// read its bytes.
	a.Recent = ledger.EntryLog{}
}

// replayJournal puts the journaled entries back into their accounts, then
// stores them all as chunks and empties the journal, so that every shard
// starts from journal record 0 whatever the number of shards was before.
func (l *Ledger) replayJournal() error {
	replayed := 0
	err := l.db.EachJournalEntry(func(en *ledger.AccountEntry) error {
		replayed++
		return l.shardFor(en.Account).book.Replay(en)
	})
	if err != nil || replayed == 0 || l.cfg.Cluster {
		// A cluster's store is a cache of its changelog: chunks written
		// here would not reach the changelog, so the entries stay Recent
		// until a sweep chunks them in a round.
		return err
	}
	w := ledgerstore.NewLedgerBatch(l.db.NewBatch())
	for _, s := range l.shards {
		for _, a := range s.book.Accounts() {
			if a.Recent.Len() > 0 {
				storeChunk(w, a)
			}
		}
	}
	w.ClearJournal()
	l.cfg.Logger.Info("replayed the history journal", "entries", replayed)
	if l.db.Fault() != nil {
		// A store that refuses writes keeps its journal, to be replayed
		// again at the next start; the Books hold the same state meanwhile.
		return w.Close()
	}
	return l.db.Commit(w.Batch)
}
