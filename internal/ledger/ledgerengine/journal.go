package ledgerengine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

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
	// twice this. A smaller sweep makes smaller chunks, and their random
	// keys cost more CPU per transfer (BenchmarkBatch8190Accounts50k).
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
	// swept is set when a sweep ends, for the shard to ask for a
	// checkpoint once the batch is published. The records below sweptTo
	// have all their entries in chunks; those below trimmedTo are gone.
	swept              bool
	sweptTo, trimmedTo uint64
}

// writeHistory adds to w the journal record of the shard's batch and the
// chunks it is due, trimming the journal after each whole sweep. A batch
// that made no entry but opened holds writes a record too: the journal
// names every transfer created since the newest checkpoint
// (checkpoint.go).
func (s *shard) writeHistory(w *ledgerstore.LedgerBatch) {
	ch := s.book.Changes()
	if ch.JournalEntries == 0 && len(ch.HoldsOpened) == 0 {
		return
	}
	h := &s.history
	w.PutJournal(s.id, h.next, ch.JournalEntries, ch.Journal, ch.HoldsOpened)
	h.next++
	if !s.l.cfg.Cluster {
		w.MarkTails(s.id, s.l.ckpt.epoch, h.next)
	}
	for _, a := range ch.Accounts {
		if a.Recent.Len() >= chunkEntries {
			storeChunk(w, a)
		}
	}
	accounts := s.book.Accounts()
	perRound := max(1, s.l.cfg.SweepEntries/len(s.l.shards))
	for h.owed += ch.JournalEntries * len(accounts); h.owed >= perRound; h.owed -= perRound {
		if h.cursor == len(accounts) {
			h.swept, h.sweptTo = true, h.roundStart
			// Visits from this batch on chunk its entries too.
			h.cursor, h.roundStart = 0, h.next
		}
		if a := accounts[h.cursor]; a.Recent.Len() > 0 {
			storeChunk(w, a)
		}
		h.cursor++
	}
	// Records the newest checkpoint does not cover stay: they name the
	// transfers it does not hold. A cluster's owner, which reads every
	// transfer id at each restore, writes no checkpoint.
	n := h.sweptTo
	if !s.l.cfg.Cluster {
		n = min(n, s.l.ckpt.covered[s.id].Load())
	}
	if n > h.trimmedTo {
		w.TrimJournal(s.id, n)
		h.trimmedTo = n
	}
}

// storeChunk moves a's Recent entries into a chunk.
func storeChunk(w *ledgerstore.LedgerBatch, a *ledger.Account) {
	w.PutChunk(a.ID, a.Entries, a.Balance, a.Recent)
	// A new log, not the old one emptied: published copies of a still
	// read its bytes.
	a.Recent = ledger.EntryLog{}
}

// replayJournal puts the journaled entries back into their accounts. With
// cp, a checkpoint of the transfer-id filter, it also adds to the filter
// the ids of the records cp does not cover, and the shards go on with
// their journals; without, it stores the entries as chunks and clears the
// journal, so that every shard starts from journal record 0 whatever the
// number of shards was before.
func (l *Ledger) replayJournal(cp *checkpoint, trimmed map[int]uint64) error {
	if cp == nil && l.cfg.Cluster {
		// A cluster's store is a cache of its changelog: chunks written
		// here would not reach the changelog. The shards go on with their
		// journals, which sweeps chunk and trim in rounds.
		cp = &checkpoint{positions: make([]uint64, len(l.shards))}
	}
	if cp == nil {
		replayed := 0
		err := l.db.EachJournalRecord(func(r *ledgerstore.JournalRecord) error {
			replayed += len(r.Entries)
			return l.replayEntries(r, nil)
		})
		if err != nil {
			return err
		}
		l.cfg.Logger.Info("replayed the history journal", "entries", replayed)
		return l.resetJournal()
	}
	// The shards wrote their records with the checkpoint's number of
	// shards (usable), each about its own accounts: they replay them at
	// once, each into its own Book.
	replayed := make([]int, len(l.shards))
	errs := make([]error, len(l.shards))
	var wg sync.WaitGroup
	for i, s := range l.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replayed[i], errs[i] = s.replayJournal(cp.positions[i], trimmed[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.cfg.Logger.Info("replayed the history journal", "entries", sum(replayed))
	l.ckpt.epoch = cp.epoch
	for i, p := range cp.positions {
		l.ckpt.covered[i].Store(p)
	}
	return nil
}

// replayJournal replays the shard's own journal records, adds to the
// filter the ids of those from covered on, and goes on numbering its
// records after them, never below covered. It returns the number of
// entries replayed.
func (s *shard) replayJournal(covered, trimmed uint64) (int, error) {
	replayed, next := 0, covered
	err := s.l.db.EachShardJournalRecord(s.id, func(r *ledgerstore.JournalRecord) error {
		if err := s.l.replayEntries(r, s); err != nil {
			return err
		}
		replayed += len(r.Entries)
		next = max(next, r.N+1)
		if r.N >= covered {
			s.l.ids.add(recordIDs(r))
		}
		return nil
	})
	h := &s.history
	h.next, h.roundStart, h.trimmedTo = next, next, trimmed
	s.l.ckpt.announced[s.id].Store(next)
	return replayed, err
}

// replayEntries replays a journal record's entries into their accounts,
// which must all be only's if only is set.
func (l *Ledger) replayEntries(r *ledgerstore.JournalRecord, only *shard) error {
	for i := range r.Entries {
		s := l.shardFor(r.Entries[i].Account)
		if only != nil && s != only {
			return fmt.Errorf("journal record %d of shard %d holds an entry of account %s, on shard %d", r.N, only.id, r.Entries[i].Account, s.id)
		}
		if err := s.book.Replay(&r.Entries[i]); err != nil {
			return err
		}
	}
	return nil
}

func sum(ns []int) (total int) {
	for _, n := range ns {
		total += n
	}
	return total
}

// recordIDs yields the ids of the transfers a journal record's batch may
// have created: those of its entries and of the holds it opened.
func recordIDs(r *ledgerstore.JournalRecord) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := range r.Entries {
			if !yield(r.Entries[i].TransferID) {
				return
			}
		}
		for _, id := range r.Holds {
			if !yield(id) {
				return
			}
		}
	}
}

// resetJournal stores every account's Recent entries as chunks and starts
// a new journal epoch, which a checkpoint written from now on names.
func (l *Ledger) resetJournal() error {
	w := ledgerstore.NewLedgerBatch(l.db.NewBatch())
	for _, s := range l.shards {
		for _, a := range s.book.Accounts() {
			if a.Recent.Len() > 0 {
				storeChunk(w, a)
			}
		}
	}
	epoch := rand.Uint64() | 1 // 0 is no epoch
	w.ResetJournal(epoch)
	w.ResetTailMarks(epoch, l.everyShard(nil))
	if l.db.Fault() != nil {
		// A store that refuses writes keeps its journal, to be replayed
		// again at the next start; the Books hold the same state meanwhile.
		return w.Close()
	}
	if err := l.db.Commit(w.Batch); err != nil {
		return err
	}
	l.ckpt.epoch = epoch
	return nil
}
