package ledgercluster

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
)

// atomicAcross runs an atomic batch along the partitions its items touch
// (ledgerengine's atomic.go, docs/CLUSTER.md): the first prepares and
// passes it on, the last decides and replies once its decision is
// committed. If the front refused item failed (> 0; -1: none), only the
// items before it are evaluated, none applied, to learn whether one of them
// fails first, as it would in the single process.
func (l *Ledger) atomicAcross(ctx context.Context, reqs []ledger.TransferRequest, cur map[string]string, failed int, res []ledger.BatchResult) []ledger.BatchResult {
	items := slices.Clone(reqs)
	if failed > 0 {
		items = items[:failed]
	}
	for i := range items {
		if items[i].ID == "" {
			items[i].ID = uuid.Must(uuid.NewV7()).String()
		}
	}
	if err := fitsOneRecord(items); err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	b := &ledgerengine.AtomicBatch{
		ID: uuid.NewString(), Reqs: items, Currencies: cur, Chain: l.chain(items),
		Results: make([]ledgerengine.WireResult, len(items)), Failed: -1, EvalOnly: failed > 0,
	}
	b.Nows = make([]time.Time, len(b.Chain))
	o := &ledgerengine.Atomic{Step: ledgerengine.OpAtomicPrepare, Batch: *b}
	err := l.do(ctx, b.Chain[0], o, nil)
	if err == nil && len(o.Results) != len(items) {
		err = ledger.Errorf(ledger.CodeOverloaded, "cluster: an atomic batch's outcome has %d results for %d items", len(o.Results), len(items))
	}
	if err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	for i, r := range o.Results {
		if r.Err != nil && r.Err.Code != ledger.CodeBatchAborted {
			return ledger.AbortedBatch(reqs, i, r.Err)
		}
		res[i] = ledger.BatchResult{Transfer: r.Transfer, Replayed: r.Replayed}
	}
	if failed > 0 {
		return ledger.AbortedBatch(reqs, failed, res[failed].Err)
	}
	return res
}

// chain lists the partitions the items touch, in the order they first
// appear, debits before credits.
func (l *Ledger) chain(items []ledger.TransferRequest) []int {
	var out []int
	for _, r := range items {
		for _, id := range [2]string{r.From, r.To} {
			if p := l.partition(id); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// maxAtomicBytes bounds an atomic batch across partitions as its command
// carries it: under the cluster's record limit (kafkalog.MaxRecordBytes,
// its topics' max.message.bytes and the producers' batch size), with room
// for the chain's fields. A command too large to forward would fail its
// round each time it is read.
const maxAtomicBytes = kafkalog.MaxRecordBytes * 7 / 8

// fitsOneRecord refuses items whose batch could not travel as one record
// once every item's result is added: a result repeats the request's
// strings and adds about 300 bytes of fixed fields. The items' JSON is
// longer than their binary command (no field names, no escapes, varints
// no longer than decimals), so the bound holds with room to spare.
func fitsOneRecord(items []ledger.TransferRequest) error {
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	if size := 2*len(b) + 320*len(items); size > maxAtomicBytes {
		return ledger.Errorf(ledger.CodeInvalidArgument, "in cluster mode an atomic batch across partitions carries at most %d bytes of items (this one about %d): split it, or send it non-atomic", maxAtomicBytes, size)
	}
	return nil
}
