package ledgerengine

import (
	"fmt"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
)

// loadAccounts puts every stored account into its shard's Book, with
// its balance and entry count as of its newest stored history chunk and
// held, by account, its open holds' sum. The chunks' tails come from
// their tail records (ledgerstore/tails.go) when their marks match the
// journal, in state js; otherwise from the chunks, and the tail records
// and marks are written then. A cluster's owner always reads the chunks:
// its store is rebuilt from changelogs, which need not carry every tail.
func (l *Ledger) loadAccounts(held map[string]int64, js ledgerstore.JournalState) (fromTails bool, err error) {
	if l.cfg.Cluster {
		return false, l.loadAccountsFromChunks(held, map[string]ledgerstore.Tail{})
	}
	next, err := l.db.JournalNext(js)
	if err != nil {
		return false, fmt.Errorf("read the journal's ends: %w", err)
	}
	match, err := l.db.TailsMatch(js.Epoch, next)
	if err != nil {
		return false, fmt.Errorf("read tail marks: %w", err)
	}
	if match {
		return true, l.loadAccountsFromTails(held)
	}
	tails := make(map[string]ledgerstore.Tail)
	if err := l.loadAccountsFromChunks(held, tails); err != nil || l.db.Fault() != nil {
		return false, err
	}
	w := ledgerstore.NewLedgerBatch(l.db.NewBatch())
	w.PutTails(tails, js.Epoch, l.everyShard(next))
	if err := l.db.Commit(w.Batch); err != nil {
		return false, fmt.Errorf("write tail records: %w", err)
	}
	return false, nil
}

// everyShard returns next with every shard of the ledger in it (0 for
// those missing): the tail marks of a journal with nothing in it.
func (l *Ledger) everyShard(next map[int]uint64) map[int]uint64 {
	if next == nil {
		next = make(map[int]uint64, len(l.shards))
	}
	for i := range l.shards {
		if _, ok := next[i]; !ok {
			next[i] = 0
		}
	}
	return next
}

// loadAccountsFromTails loads every account with its tail read from the
// tail records.
func (l *Ledger) loadAccountsFromTails(held map[string]int64) (err error) {
	c, err := l.db.TailCursor()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}()
	return l.db.EachAccount(func(a ledger.Account) error {
		t, ok, err := c.Tail(a.ID)
		if err != nil {
			return fmt.Errorf("tail of account %s: %w", a.ID, err)
		}
		l.loadAccount(a, t, ok, held)
		return nil
	})
}

// loadAccountsFromChunks loads every account with its tail read from its
// newest chunk, and puts the tails of the accounts that have one in tails.
func (l *Ledger) loadAccountsFromChunks(held map[string]int64, tails map[string]ledgerstore.Tail) (err error) {
	r, err := l.db.Tails()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	return l.db.EachAccount(func(a ledger.Account) error {
		last, ok, err := r.Newest(a.ID)
		if err != nil {
			return err
		}
		t := ledgerstore.Tail{Seq: last.Seq, Balance: last.BalanceAfter}
		if ok {
			tails[a.ID] = t
		}
		l.loadAccount(a, t, ok, held)
		return nil
	})
}

// loadAccount puts a into its shard's Book with the tail t of its history
// if it has one.
func (l *Ledger) loadAccount(a ledger.Account, t ledgerstore.Tail, ok bool, held map[string]int64) {
	if ok {
		a.Balance, a.Entries = t.Balance, t.Seq
	}
	a.Pending = held[a.ID]
	l.shardFor(a.ID).book.Load(a)
}
