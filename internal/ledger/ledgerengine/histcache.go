package ledgerengine

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/surge-dev/surge/internal/ledger"
)

// History pages are read from storage: a reverse range scan through the
// LSM's levels dominated a wallet GetHistory's server CPU. The
// newest page of an account is read over and over (an app opening the
// wallet), so the engine keeps the last newest page read of recently read
// accounts.
//
// No invalidation is needed: an account's entries are appended with the
// next seq and never change once durable, so a cached run of entries stays
// correct forever. It stops covering the newest page when the account gets
// a newer entry, and is replaced the next time that page is read.

const (
	// historyCacheAccounts bounds the accounts whose page is kept.
	historyCacheAccounts = 4096
	// historyCacheMaxPage is the largest page kept; larger pages are rare
	// and would let a few accounts hold much of the memory.
	historyCacheMaxPage = 64
)

// historyRun is a run of one account's entries with contiguous seqs,
// newest first.
type historyRun []ledger.Entry

// historyCache maps an account id to its historyRun.
type historyCache struct {
	runs *lru.Cache[string, historyRun]
}

func newHistoryCache() *historyCache {
	runs, err := lru.New[string, historyRun](historyCacheAccounts)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &historyCache{runs: runs}
}

// page returns a copy of account's entries with seq in [lo, before), newest
// first, if the cached run holds all of them.
func (h *historyCache) page(account string, lo, before uint64) ([]ledger.Entry, bool) {
	run, ok := h.runs.Get(account)
	if !ok || len(run) == 0 {
		return nil, false
	}
	newest, oldest := run[0].Seq, run[len(run)-1].Seq
	if before-1 > newest || lo < oldest {
		return nil, false
	}
	return append([]ledger.Entry(nil), run[newest-(before-1):newest-lo+1]...), true
}

// keep caches entries, a page read from storage that ends at the account's
// newest entry.
func (h *historyCache) keep(account string, entries []ledger.Entry) {
	if len(entries) == 0 || len(entries) > historyCacheMaxPage {
		return
	}
	h.runs.Add(account, append(historyRun(nil), entries...))
}
