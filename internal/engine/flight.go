package engine

import (
	"maps"
	"sync"

	"github.com/surge-dev/surge/internal/ledger"
)

// flight counts money between shards: debited on the sending shard and not
// yet credited on the receiving one. With it the ledger balances at every
// moment: per currency, the sum of balances plus the amount in flight is 0.
type flight struct {
	mu     sync.Mutex
	legs   int64
	amount map[string]int64 // currency → amount
}

// update adds the credits a batch sent and removes those it settled. Both
// accounts of a leg hold the same currency, so currencyOf is asked only
// about accounts of the shard that ran the batch: the sender of a leg sent,
// the receiver of a leg settled.
func (f *flight) update(sent, settled []ledger.CreditLeg, currencyOf func(account string) string) {
	if len(sent) == 0 && len(settled) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.amount == nil {
		f.amount = make(map[string]int64)
	}
	for _, c := range sent {
		f.amount[currencyOf(c.From)] += c.Amount
	}
	for _, c := range settled {
		cur := currencyOf(c.To)
		if f.amount[cur] -= c.Amount; f.amount[cur] == 0 {
			delete(f.amount, cur)
		}
	}
	f.legs += int64(len(sent) - len(settled))
}

func (f *flight) snapshot() (int64, map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.legs, maps.Clone(f.amount)
}
