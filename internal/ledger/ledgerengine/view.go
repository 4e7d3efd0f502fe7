package ledgerengine

import "github.com/surge-dev/surge/internal/ledger"

// view is the committed view of every account: a copy as of its last
// durable batch. It holds accounts by value rather than pointers because
// every batch republishes each account it touched: storing a pointer would
// allocate a copy each time, where assigning in place costs almost nothing.
type view struct {
	m *stripedMap[ledger.Account]
}

func newView() *view { return &view{m: newStripedMap[ledger.Account]()} }

func (v *view) load(id string) (ledger.Account, bool) { return v.m.load(id) }

// currency returns the currency of account id without copying the rest of
// the account out of the map, for the check every transfer to another
// shard's account makes. Only an empty currency, which the transports
// refuse but the Book does not, needs the second lookup that tells an
// absent account from it.
func (v *view) currency(id string) (c string, ok bool) {
	st := v.m.stripe(id)
	st.mu.RLock()
	if c = st.m[id].Currency; c == "" {
		_, ok = st.m[id]
	}
	st.mu.RUnlock()
	return c, ok || c != ""
}

func (v *view) store(a *ledger.Account) { v.m.store(a.ID, *a) }

// each calls fn for every account; publishes must be held off (viewMu) for
// the result to be a consistent cut.
func (v *view) each(fn func(*ledger.Account)) { v.m.each(fn) }
