package ledgerengine

import "github.com/surge-dev/surge/internal/ledger"

// view is the committed view of every account: its state as of its last
// durable batch. It holds entries by value rather than pointers because
// every batch republishes each account it touched: storing a pointer would
// allocate a copy each time, where assigning in place costs almost nothing.
//
// An entry copies only what transfers change; the rest of an account (its
// id, currency, limit, metadata, creation time) is written once, before
// the account is first published, so the entry points at the Book's
// account for it. At a million accounts a whole copy per account was half
// of the live heap (285 bytes an account, pprof), which the garbage
// collector marks again on every cycle.
type view struct {
	m *stripedMap[viewEntry]
}

// viewEntry is one account in the view.
type viewEntry struct {
	// fixed is the Book's account: read only for the fields no transfer
	// changes.
	fixed   *ledger.Account
	balance int64
	pending int64
	entries uint64
	recent  ledger.EntryLog
}

func newView() *view { return &view{m: newStripedMap[viewEntry]()} }

func (v *view) load(id string) (ledger.Account, bool) {
	e, ok := v.m.load(id)
	if !ok {
		return ledger.Account{}, false
	}
	return e.account(), true
}

// account is the account e shows.
func (e *viewEntry) account() ledger.Account {
	f := e.fixed
	return ledger.Account{
		ID: f.ID, Currency: f.Currency, OverdraftLimit: f.OverdraftLimit, Metadata: f.Metadata, CreatedAt: f.CreatedAt,
		Balance: e.balance, Pending: e.pending, Entries: e.entries, Recent: e.recent,
	}
}

// currency returns the currency of account id without copying the rest of
// the account out of the map, for the check every transfer to another
// shard's account makes.
func (v *view) currency(id string) (string, bool) {
	st := v.m.stripe(id)
	st.mu.RLock()
	e, ok := st.m[id]
	st.mu.RUnlock()
	if !ok {
		return "", false
	}
	return e.fixed.Currency, true
}

// store publishes a, an account of a Book, as it is now.
func (v *view) store(a *ledger.Account) {
	v.m.store(a.ID, viewEntry{fixed: a, balance: a.Balance, pending: a.Pending, entries: a.Entries, recent: a.Recent})
}

// each calls fn for every account; publishes must be held off (viewMu) for
// the result to be a consistent cut.
func (v *view) each(fn func(*ledger.Account)) {
	v.m.each(func(e *viewEntry) {
		a := e.account()
		fn(&a)
	})
}
