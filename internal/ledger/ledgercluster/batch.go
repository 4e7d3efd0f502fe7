package ledgercluster

import (
	"context"
	"sync"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
)

// TransferBatch applies reqs, each debiting partition its share as one
// command. Items naming an unknown receiver fail before anything is sent.
// An atomic batch whose items span partitions, or one of whose items failed
// so, runs along the partitions it touches (atomic.go).
func (l *Ledger) TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	res := make([]ledger.BatchResult, len(reqs))
	groups := map[int][]int{} // partition → positions in reqs
	cur := map[string]string{}
	failed := -1
	for i, r := range reqs {
		res[i].Transfer.ID = r.ID
		if err := l.checkItem(ctx, r, cur); err != nil {
			res[i].Err = err
			if failed < 0 {
				failed = i
			}
			continue
		}
		p := l.partition(r.From)
		groups[p] = append(groups[p], i)
	}
	switch {
	case atomic && failed == 0:
		return ledger.AbortedBatch(reqs, 0, res[0].Err), nil
	case atomic && (failed > 0 || len(groups) > 1):
		return l.atomicAcross(ctx, reqs, cur, failed, res), nil
	}
	var wg sync.WaitGroup
	for p, idx := range groups {
		wg.Go(func() { l.sendGroup(ctx, p, reqs, idx, atomic, cur, res) })
	}
	wg.Wait()
	return res, nil
}

// checkItem refuses an item whose receiver does not exist, and notes the
// receiver's currency in cur.
func (l *Ledger) checkItem(ctx context.Context, r ledger.TransferRequest, cur map[string]string) error {
	if _, ok := cur[r.To]; ok {
		return nil
	}
	c, err := l.CurrencyOf(ctx, r.To)
	if err == nil {
		cur[r.To] = c
	}
	return err
}

// sendGroup sends the items idx of reqs, which debit partition p, and
// fills their results.
func (l *Ledger) sendGroup(ctx context.Context, p int, reqs []ledger.TransferRequest, idx []int, atomic bool, cur map[string]string, res []ledger.BatchResult) {
	c := &ledgerengine.Batch{Atomic: atomic, Currencies: map[string]string{}}
	for _, i := range idx {
		c.Reqs = append(c.Reqs, reqs[i])
		c.Currencies[reqs[i].To] = cur[reqs[i].To]
	}
	err := l.do(ctx, p, c, nil)
	for j, i := range idx {
		switch {
		case err != nil:
			res[i].Err = err
		case j < len(c.Results):
			res[i] = c.Results[j]
		}
	}
}
