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
	k          caller
	partitions int
	// currencies caches accounts known to exist, with their currency.
	currencies sync.Map
}

// caller sends a command to a partition and decodes its reply
// (calls.Caller).
type caller interface {
	CallWith(ctx context.Context, partition int, cmd []byte, effect calls.Effect, decode func([]byte) error) error
}

// New is the ledger over calls sent with k to a cluster of partitions.
func New(k *calls.Caller, partitions int32) *Ledger {
	return &Ledger{k: k, partitions: int(partitions)}
}

func (l *Ledger) partition(key string) int { return engine.ShardIndex(key, l.partitions) }

// do sends c to partition and decodes its outcome into c. The error is
// the command's transport's, or the outcome's own Err a caller passes:
// a domain error as the client hears it, a fault as the cluster's.
func (l *Ledger) do(ctx context.Context, partition int, c ledgerengine.Command, outcome *error) error {
	cmd := ledgerengine.AppendEncode(calls.Command(calls.WorkloadLedger), c)
	if err := l.k.CallWith(ctx, partition, cmd, calls.EffectOf(c.Op().ReadOnly()), func(b []byte) error { return ledgerengine.DecodeOutcome(c, b) }); err != nil {
		if errors.Is(err, calls.ErrUnavailable) {
			return ledger.Errorf(ledger.CodeOverloaded, "cluster: partition %d did not answer: %v", partition, err)
		}
		return err
	}
	if outcome == nil || *outcome == nil {
		return nil
	}
	var e *ledger.Error
	if errors.As(*outcome, &e) {
		return e
	}
	return errors.New("cluster: " + (*outcome).Error())
}

// CreateAccount opens an account on its partition.
func (l *Ledger) CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	c := &ledgerengine.CreateAccount{Spec: spec}
	if err := l.do(ctx, l.partition(spec.ID), c, &c.Err); err != nil {
		return ledger.Account{}, false, err
	}
	l.currencies.Store(c.Account.ID, c.Account.Currency)
	return c.Account, c.Created, nil
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
	c := &ledgerengine.ReadAccount{ID: id}
	if err := l.do(ctx, l.partition(id), c, &c.Err); err != nil {
		return ledger.Account{}, err
	}
	return c.Account, nil
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

// receiver returns the currency of receiver to ("" if none is named); an
// unknown receiver is an account_not_found error, before anything is
// debited.
func (l *Ledger) receiver(ctx context.Context, to string) (string, error) {
	if to == "" {
		return "", nil
	}
	return l.CurrencyOf(ctx, to)
}

// Transfer moves money: the debit's partition applies it and owes the
// credit, forwarded, in the same write. A pending transfer's hold is on the
// debit's partition.
func (l *Ledger) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	cur, err := l.receiver(ctx, req.To)
	if err != nil {
		return ledger.Transfer{}, false, err
	}
	c := &ledgerengine.Transfer{Req: req, Currency: cur}
	if err := l.do(ctx, l.partition(req.From), c, &c.Err); err != nil {
		return ledger.Transfer{}, false, err
	}
	return c.Transfer, c.Replayed, nil
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
// to the receiver's partition, owed in the post's write.
func (l *Ledger) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	c := &ledgerengine.Post{ID: id, Amount: amount}
	return l.settle(ctx, id, c, &c.Transfer, &c.Err)
}

// VoidPending releases a pending transfer's hold on its debit's partition.
func (l *Ledger) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	c := &ledgerengine.Void{ID: id}
	return l.settle(ctx, id, c, &c.Transfer, &c.Err)
}

// GetTransfer asks every partition, since a transfer lives in its debit's
// partition and its id does not name it.
func (l *Ledger) GetTransfer(ctx context.Context, id string) (ledger.Transfer, error) {
	outs := make([]ledgerengine.GetTransfer, l.partitions)
	err := l.everyPartition(ctx, func(p int) error {
		c := &outs[p]
		c.ID = id
		err := l.do(ctx, p, c, &c.Err)
		if ledger.CodeOf(err) == ledger.CodeTransferNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return ledger.Transfer{}, err
	}
	for _, c := range outs {
		if c.Err == nil {
			return c.Transfer, nil
		}
	}
	return ledger.Transfer{}, ledger.Errorf(ledger.CodeTransferNotFound, "transfer %s not found", id)
}

// settle sends c, a post or a void of transfer id, to the partition of
// the transfer's debit, and returns its outcome, *t and *outcome: a
// transfer never changes accounts, so the read that finds it stays true.
func (l *Ledger) settle(ctx context.Context, id string, c ledgerengine.Command, t *ledger.Transfer, outcome *error) (ledger.Transfer, error) {
	found, err := l.GetTransfer(ctx, id)
	if err != nil {
		return ledger.Transfer{}, err
	}
	if err := l.do(ctx, l.partition(found.From), c, outcome); err != nil {
		return ledger.Transfer{}, err
	}
	return *t, nil
}

// History reads a page of an account's history from its partition's owner.
func (l *Ledger) History(ctx context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	c := &ledgerengine.History{ID: accountID, Query: q}
	if err := l.do(ctx, l.partition(accountID), c, &c.Err); err != nil {
		return ledger.HistoryPage{}, err
	}
	return c.Page, nil
}

// Stats sums every partition's totals. Each partition's balances and
// credit sums are of one round of its own; within a partition, balances
// minus credits received plus credits sent are 0, so the balances and the
// credits in flight (sent but not yet received) sum to 0.
func (l *Ledger) Stats(ctx context.Context) (ledger.Stats, error) {
	outs := make([]ledgerengine.Stats, l.partitions)
	if err := l.everyPartition(ctx, func(p int) error { return l.do(ctx, p, &outs[p], nil) }); err != nil {
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

// everyPartition runs call for every partition at once and joins their
// errors.
func (l *Ledger) everyPartition(ctx context.Context, call func(partition int) error) error {
	errs := make([]error, l.partitions)
	var wg sync.WaitGroup
	for p := range l.partitions {
		wg.Go(func() { errs[p] = call(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
