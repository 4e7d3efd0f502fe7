package ledgerstore

import (
	"encoding/json"
	"fmt"

	"github.com/surge-dev/surge/internal/ledger"
)

// Records a shard keeps in a cluster (internal/cluster), beside the layout
// of ledgerstore.go:
//
//	lc/<shard:2 BE>            the sums of the credits the shard forwarded
//	                           to other shards and received from them
var prefixCredits = []byte("lc/")

func creditsKey(shard int) []byte {
	return append(append([]byte(nil), prefixCredits...), byte(shard>>8), byte(shard))
}

// PutCreditSums writes shard's credit sums.
func (w *LedgerBatch) PutCreditSums(shard int, s ledger.CreditSums) {
	v, _ := json.Marshal(s) // maps of strings to integers always encode
	_ = w.Set(creditsKey(shard), v, nil)
}

// CreditSums reads shard's credit sums; zero sums if it never wrote any.
func (s Store) CreditSums(shard int) (ledger.CreditSums, error) {
	var sums ledger.CreditSums
	v, ok, err := s.Get(creditsKey(shard))
	if err != nil || !ok {
		return sums, err
	}
	if err := json.Unmarshal(v, &sums); err != nil {
		return sums, fmt.Errorf("ledgerstore: credit sums of shard %d: %w", shard, err)
	}
	return sums, nil
}
