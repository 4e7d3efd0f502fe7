// Package ledgercluster is the ledger as the clients of a surge cluster
// node see it (docs/CLUSTER.md): each call is a ledgerengine command to
// the partition that owns its account, whose owner runs ledgerengine's
// cluster shards and answers once its round committed.
package ledgercluster

import (
	"context"
	"errors"
	"sync"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
)

// Ledger is the ledger's API on a cluster node (ledgerapi.Ledger): each
// call is a command to the partition owning its account, answered by that
// partition's owner once its round committed. Records attached to
// transfers are refused with a clear error.
type Ledger struct {
	k          *calls.Caller
	partitions int
	// currencies caches accounts known to exist, with their currency.
	currencies sync.Map
}

// New is the ledger over calls sent with k to a cluster of partitions.
func New(k *calls.Caller, partitions int32) *Ledger {
	return &Ledger{k: k, partitions: int(partitions)}
}

func (l *Ledger) partition(key string) int { return engine.ShardIndex(key, l.partitions) }

// do sends w to partition and decodes the outcome.
func (l *Ledger) do(ctx context.Context, partition int, w *ledgerengine.WireCommand) (*ledgerengine.WireOutcome, error) {
	var o ledgerengine.WireOutcome
	v, err := ledgerengine.EncodeCommand(w)
	if err != nil {
		return nil, err
	}
	if err := l.k.CallWith(ctx, partition, calls.WorkloadLedger, v, func(b []byte) error { return ledgerengine.DecodeOutcome(b, &o) }); err != nil {
		if errors.Is(err, calls.ErrUnavailable) {
			return nil, ledger.Errorf(ledger.CodeOverloaded, "cluster: partition %d did not answer: %v", partition, err)
		}
		return nil, err
	}
	switch {
	case o.Fault != "":
		return nil, errors.New("cluster: " + o.Fault)
	case o.Err != nil:
		return &o, o.Err
	}
	return &o, nil
}

// CreateAccount opens an account on its partition.
func (l *Ledger) CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	o, err := l.do(ctx, l.partition(spec.ID), &ledgerengine.WireCommand{Op: ledgerengine.OpCreateAccount, Spec: &spec})
	if err != nil {
		return ledger.Account{}, false, err
	}
	l.currencies.Store(o.Account.ID, o.Account.Currency)
	return *o.Account, o.Created, nil
}

// CreateWorld creates @world in currency; an existing one is kept.
func (l *Ledger) CreateWorld(ctx context.Context, currency string) error {
	_, _, err := l.CreateAccount(ctx, ledger.AccountSpec{ID: ledger.WorldID, Currency: currency})
	if ledger.CodeOf(err) == ledger.CodeAccountExists {
		return nil
	}
	return err
}

// Account reads an account from its partition's owner.
func (l *Ledger) Account(ctx context.Context, id string) (ledger.Account, error) {
	o, err := l.do(ctx, l.partition(id), &ledgerengine.WireCommand{Op: ledgerengine.OpAccount, ID: id})
	if err != nil {
		return ledger.Account{}, err
	}
	return *o.Account, nil
}

// CurrencyOf returns the currency of account id, which must exist.
func (l *Ledger) CurrencyOf(ctx context.Context, id string) (string, error) {
	if c, ok := l.currencies.Load(id); ok {
		return c.(string), nil
	}
	a, err := l.Account(ctx, id)
	if err != nil {
		return "", err
	}
	l.currencies.Store(id, a.Currency)
	return a.Currency, nil
}

// receivers returns the currencies of reqs' receivers; an unknown receiver
// is an account_not_found error, before anything is debited.
func (l *Ledger) receivers(ctx context.Context, reqs []ledger.TransferRequest) (map[string]string, error) {
	out := make(map[string]string)
	for _, r := range reqs {
		if _, ok := out[r.To]; ok || r.To == "" {
			continue
		}
		c, err := l.CurrencyOf(ctx, r.To)
		if err != nil {
			return nil, err
		}
		out[r.To] = c
	}
	return out, nil
}

// Transfer moves money: the debit's partition applies it and forwards the
// credit in the same transaction. A pending transfer's hold is on the
// debit's partition.
func (l *Ledger) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	cur, err := l.receivers(ctx, []ledger.TransferRequest{req})
	if err != nil {
		return ledger.Transfer{}, false, err
	}
	o, err := l.do(ctx, l.partition(req.From), &ledgerengine.WireCommand{Op: ledgerengine.OpTransfer, Req: &req, Currencies: cur})
	if err != nil {
		return ledger.Transfer{}, false, err
	}
	return *o.Transfer, o.Replayed, nil
}

// TransferWith is Transfer; records attached to a transfer (the wallet's)
// are not carried in cluster mode.
func (l *Ledger) TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error) {
	if len(attached) > 0 {
		return ledger.Transfer{}, false, errors.New("cluster: records attached to a transfer are not carried in cluster mode")
	}
	return l.Transfer(ctx, req)
}

// PostPending posts a pending transfer (amount 0: all it holds) on its
// debit's partition, found by reading the transfer; the credit is forwarded
// to the receiver's partition in the post's transaction.
func (l *Ledger) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	return l.settle(ctx, &ledgerengine.WireCommand{Op: ledgerengine.OpPost, ID: id, Amount: amount})
}

// VoidPending releases a pending transfer's hold on its debit's partition.
func (l *Ledger) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	return l.settle(ctx, &ledgerengine.WireCommand{Op: ledgerengine.OpVoid, ID: id})
}

// GetTransfer asks every partition, since a transfer lives in its debit's
// partition and its id does not name it.
func (l *Ledger) GetTransfer(ctx context.Context, id string) (ledger.Transfer, error) {
	outs, err := l.everyPartition(ctx, &ledgerengine.WireCommand{Op: ledgerengine.OpGetTransfer, ID: id}, ledger.CodeTransferNotFound)
	if err != nil {
		return ledger.Transfer{}, err
	}
	for _, o := range outs {
		if o != nil && o.Transfer != nil {
			return *o.Transfer, nil
		}
	}
	return ledger.Transfer{}, ledger.Errorf(ledger.CodeTransferNotFound, "transfer %s not found", id)
}

// settle sends w, a post or a void of transfer w.ID, to the partition of
// the transfer's debit: a transfer never changes accounts, so the read
// that finds it stays true.
func (l *Ledger) settle(ctx context.Context, w *ledgerengine.WireCommand) (ledger.Transfer, error) {
	t, err := l.GetTransfer(ctx, w.ID)
	if err != nil {
		return ledger.Transfer{}, err
	}
	o, err := l.do(ctx, l.partition(t.From), w)
	if err != nil {
		return ledger.Transfer{}, err
	}
	return *o.Transfer, nil
}

// History reads a page of an account's history from its partition's owner.
func (l *Ledger) History(ctx context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	o, err := l.do(ctx, l.partition(accountID), &ledgerengine.WireCommand{Op: ledgerengine.OpHistory, ID: accountID, Query: &q})
	if err != nil {
		return ledger.HistoryPage{}, err
	}
	return *o.Page, nil
}

// Stats sums every partition's totals. Each partition's balances and
// credit sums are of one round of its own; within a partition, balances
// minus credits received plus credits sent are 0, so the balances and the
// credits in flight (sent but not yet received) sum to 0.
func (l *Ledger) Stats(ctx context.Context) (ledger.Stats, error) {
	outs, err := l.everyPartition(ctx, &ledgerengine.WireCommand{Op: ledgerengine.OpStats}, "")
	if err != nil {
		return ledger.Stats{}, err
	}
	st := ledger.Stats{BalanceSum: map[string]int64{}, CreditsInFlight: map[string]int64{}}
	for _, o := range outs {
		s := o.Stats
		st.Accounts += s.Accounts
		for c, v := range s.Balances {
			st.BalanceSum[c] += v
		}
		for c, v := range s.Credits.Sent {
			st.CreditsInFlight[c] += v
		}
		for c, v := range s.Credits.Received {
			st.CreditsInFlight[c] -= v
		}
	}
	return st, nil
}

// everyPartition sends w to every partition at once and returns their
// outcomes, by partition; an error of code ok leaves that outcome nil.
func (l *Ledger) everyPartition(ctx context.Context, w *ledgerengine.WireCommand, ok ledger.Code) ([]*ledgerengine.WireOutcome, error) {
	outs := make([]*ledgerengine.WireOutcome, l.partitions)
	errs := make([]error, l.partitions)
	var wg sync.WaitGroup
	for p := range l.partitions {
		wg.Go(func() {
			o, err := l.do(ctx, p, w)
			if err != nil && ok != "" && ledger.CodeOf(err) == ok {
				return
			}
			outs[p], errs[p] = o, err
		})
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}
