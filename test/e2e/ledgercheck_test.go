package e2e

import (
	"net/http"
	"sync"
	"testing"
)

// ledgerView is the state of a set of accounts read after a run: each
// account and its whole history.
type ledgerView struct {
	accounts map[string]Account
	history  map[string][]Entry
}

// readLedger reads the given accounts and their histories concurrently.
func readLedger(t testing.TB, c *Client, ids []string) ledgerView {
	t.Helper()
	v := ledgerView{accounts: map[string]Account{}, history: map[string][]Entry{}}
	var mu sync.Mutex
	parallel(8, len(ids), func(i int) {
		id := ids[i]
		a, r, err := c.Account(id)
		if !want(t, r, err, http.StatusOK, "") {
			return
		}
		h, err := c.History(id, 1000)
		if err != nil {
			t.Errorf("history of %s: %v", id, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		v.accounts[id], v.history[id] = a, h
	})
	if t.Failed() {
		t.FailNow()
	}
	return v
}

// wantConsistent checks each account against its own history, and that
// the balances of all the view's accounts (which must be every account of
// the ledger) sum to 0.
func (v ledgerView) wantConsistent(t testing.TB) {
	t.Helper()
	var sum int64
	for id, a := range v.accounts {
		wantAccountMatchesHistory(t, a, v.history[id])
		sum += a.Balance
	}
	if sum != 0 {
		t.Errorf("balances of all %d accounts sum to %d, want 0", len(v.accounts), sum)
	}
}

// wantHeld checks each account's pending amount against held, the sum of
// its open holds (absent: none).
func (v ledgerView) wantHeld(t testing.TB, held map[string]int64) {
	t.Helper()
	for id, a := range v.accounts {
		if a.Pending != held[id] || a.Available != a.Balance-a.Pending {
			t.Errorf("%s: pending %d available %d balance %d; want pending %d (its open holds)", id, a.Pending, a.Available, a.Balance, held[id])
		}
	}
}

// wantAccountMatchesHistory checks one account's history, newest first:
// seq runs from entries down to 1, no transfer appears twice, each
// balance_after follows from the entry before it, and the balance equals
// credits minus debits.
func wantAccountMatchesHistory(t testing.TB, a Account, h []Entry) {
	t.Helper()
	if uint64(len(h)) != a.Entries {
		t.Errorf("%s: entries=%d but history has %d items", a.ID, a.Entries, len(h))
	}
	seen := map[string]bool{}
	var net int64
	for i, e := range h {
		if wantSeq := uint64(len(h) - i); e.Seq != wantSeq {
			t.Errorf("%s: history item %d has seq %d, want %d (newest first, no gaps)", a.ID, i, e.Seq, wantSeq)
		}
		if seen[e.TransferID] {
			t.Errorf("%s: transfer %s appears twice in the history", a.ID, e.TransferID)
		}
		seen[e.TransferID] = true
		net += signed(e)
		if i+1 < len(h) && h[i+1].BalanceAfter+signed(e) != e.BalanceAfter {
			t.Errorf("%s: seq %d: balance_after %d does not follow %d %+d", a.ID, e.Seq, e.BalanceAfter, h[i+1].BalanceAfter, signed(e))
		}
	}
	if net != a.Balance {
		t.Errorf("%s: balance %d, but credits minus debits of its history = %d", a.ID, a.Balance, net)
	}
	if len(h) > 0 && h[0].BalanceAfter != a.Balance {
		t.Errorf("%s: balance %d, newest balance_after %d", a.ID, a.Balance, h[0].BalanceAfter)
	}
}

// signed is an entry's effect on its account's balance.
func signed(e Entry) int64 {
	if e.Direction == "debit" {
		return -e.Amount
	}
	return e.Amount
}

// legs counts where a transfer id appears in a view: as debits of one
// account and credits of another.
type legs struct {
	debits, credits []legRef
}

// legRef is one history entry of a transfer, with the account it is in.
type legRef struct {
	account string
	entry   Entry
}

// index maps every transfer id in the view's histories to its entries.
func (v ledgerView) index() map[string]*legs {
	idx := map[string]*legs{}
	for acct, h := range v.history {
		for _, e := range h {
			l := idx[e.TransferID]
			if l == nil {
				l = &legs{}
				idx[e.TransferID] = l
			}
			ref := legRef{account: acct, entry: e}
			if e.Direction == "debit" {
				l.debits = append(l.debits, ref)
			} else {
				l.credits = append(l.credits, ref)
			}
		}
	}
	return idx
}

// wantPresent checks that a transfer appears exactly once as a debit of
// its source and once as a credit of its destination, with its amount.
func wantPresent(t testing.TB, idx map[string]*legs, req TransferReq) {
	t.Helper()
	l := idx[req.ID]
	if l == nil || len(l.debits) != 1 || len(l.credits) != 1 {
		t.Errorf("transfer %s (%s->%s %d) should appear once on each side; found %s", req.ID, req.From, req.To, req.Amount, describeLegs(l))
		return
	}
	d, c := l.debits[0], l.credits[0]
	if d.account != req.From || d.entry.Counterpart != req.To || d.entry.Amount != req.Amount ||
		c.account != req.To || c.entry.Counterpart != req.From || c.entry.Amount != req.Amount {
		t.Errorf("transfer %s (%s->%s %d) recorded as %s", req.ID, req.From, req.To, req.Amount, describeLegs(l))
	}
}

// wantAbsent checks that a transfer appears in no history.
func wantAbsent(t testing.TB, idx map[string]*legs, req TransferReq) {
	t.Helper()
	if l := idx[req.ID]; l != nil {
		t.Errorf("transfer %s (%s->%s %d) should not exist; found %s", req.ID, req.From, req.To, req.Amount, describeLegs(l))
	}
}

// describeLegs renders where a transfer was found, for failure messages.
func describeLegs(l *legs) string {
	if l == nil {
		return "nowhere"
	}
	s := ""
	for _, r := range append(append([]legRef{}, l.debits...), l.credits...) {
		s += " [" + r.account + " " + r.entry.Direction + " " + r.entry.Counterpart + "]"
	}
	return s
}

// wantNoPhantoms checks that every transfer in the histories is one that
// a client asked for.
func wantNoPhantoms(t testing.TB, idx map[string]*legs, known map[string]bool) {
	t.Helper()
	for id, l := range idx {
		if !known[id] {
			t.Errorf("history holds transfer %s that no client made: %s", id, describeLegs(l))
		}
	}
}

// wantStored checks, via GET /v1/transfers/{id}, that each acknowledged
// transfer exists, posted, with its accounts and amount.
func wantStored(t testing.TB, c *Client, reqs []TransferReq) {
	t.Helper()
	parallel(8, len(reqs), func(i int) {
		req := reqs[i]
		got, r, err := c.GetTransfer(req.ID)
		if err != nil || r.Status != http.StatusOK {
			t.Errorf("acknowledged transfer %s (%s->%s %d) is not stored: %v %v", req.ID, req.From, req.To, req.Amount, r, err)
			return
		}
		if got.From != req.From || got.To != req.To || got.Amount != req.Amount || got.State != "posted" || got.PostedAmount != req.Amount {
			t.Errorf("transfer %s: asked %s->%s %d, stored %+v", req.ID, req.From, req.To, req.Amount, got)
		}
	})
}

// wantNotStored checks, via GET /v1/transfers/{id}, that none of reqs
// exists.
func wantNotStored(t testing.TB, c *Client, reqs []TransferReq) {
	t.Helper()
	parallel(8, len(reqs), func(i int) {
		req := reqs[i]
		got, r, err := c.GetTransfer(req.ID)
		if err != nil || r.Status != http.StatusNotFound || r.Problem.Code != "transfer_not_found" {
			t.Errorf("transfer %s (%s->%s %d) should not exist: %v %+v %v", req.ID, req.From, req.To, req.Amount, r, got, err)
		}
	})
}
