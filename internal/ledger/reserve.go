package ledger

import "time"

// Reserve holds amount on account, one of the Book's, under id: a hold that
// is no transfer between accounts, which the Book keeps and stores as a
// pending transfer from account to itself (so that a reload restores it
// with the others), and note with it. A cluster's atomic batch across
// shards reserves so what its items will need until it is decided.
func (b *Book) Reserve(id, account string, amount int64, note string, now time.Time) error {
	from, ok := b.accounts[account]
	if !ok {
		return Errorf(CodeAccountNotFound, "account %s not found", account)
	}
	rec := &Transfer{
		ID: id, From: account, To: account, Amount: amount, Currency: from.Currency, Memo: note,
		State: StatePending, TwoPhase: true, CreatedAt: now, UpdatedAt: now,
	}
	b.hold(from, rec)
	b.record(rec)
	return nil
}

// Reserved reports whether the hold id is open.
func (b *Book) Reserved(id string) bool {
	_, ok := b.pending[id]
	return ok
}

// Unreserve releases the hold id that Reserve made, if it is open.
func (b *Book) Unreserve(id string, now time.Time) {
	if rec, ok := b.pending[id]; ok {
		b.release(rec, StateVoided, now)
	}
}
