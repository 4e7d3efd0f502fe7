package dashboard

import (
	"context"
	"sync"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/store"
)

// feedCapacity bounds the transfers a LedgerFeed keeps.
const feedCapacity = 64

// LedgerFeed is the ledger's TransferFeed: it wraps the ledger the HTTP
// transport calls and keeps the newest transfers it acknowledged (created,
// posted or voided), at the cost of a short lock per write.
type LedgerFeed struct {
	ledgerapi.Ledger
	mu   sync.Mutex
	ring [feedCapacity]TransferSummary
	next int // slot of the next write
	n    int // slots filled
}

// NewLedgerFeed returns a feed of the transfers acknowledged through the
// returned value, which serves as next does.
func NewLedgerFeed(next ledgerapi.Ledger) *LedgerFeed { return &LedgerFeed{Ledger: next} }

// Transfer records an acknowledged new transfer.
func (f *LedgerFeed) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	return f.TransferWith(ctx, req, nil)
}

// TransferWith records an acknowledged new transfer.
func (f *LedgerFeed) TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error) {
	t, replayed, err := f.Ledger.TransferWith(ctx, req, attached)
	if err == nil && !replayed {
		f.add(&t)
	}
	return t, replayed, err
}

// TransferBatch records a batch's acknowledged new transfers; of a large
// batch only the last ones fit.
func (f *LedgerFeed) TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	res, err := f.Ledger.TransferBatch(ctx, reqs, atomic)
	if err != nil {
		return res, err
	}
	first := len(res)
	for kept := 0; first > 0 && kept < feedCapacity; first-- {
		if r := &res[first-1]; r.Err == nil && !r.Replayed {
			kept++
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := first; i < len(res); i++ {
		if r := &res[i]; r.Err == nil && !r.Replayed {
			f.addLocked(&r.Transfer)
		}
	}
	return res, nil
}

// PostPending records a posted transfer.
func (f *LedgerFeed) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	t, err := f.Ledger.PostPending(ctx, id, amount)
	if err == nil {
		f.add(&t)
	}
	return t, err
}

// VoidPending records a voided transfer.
func (f *LedgerFeed) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	t, err := f.Ledger.VoidPending(ctx, id)
	if err == nil {
		f.add(&t)
	}
	return t, err
}

func (f *LedgerFeed) add(t *ledger.Transfer) {
	f.mu.Lock()
	f.addLocked(t)
	f.mu.Unlock()
}

func (f *LedgerFeed) addLocked(t *ledger.Transfer) {
	at := t.UpdatedAt
	if at.IsZero() {
		at = t.CreatedAt
	}
	f.ring[f.next] = TransferSummary{
		ID: t.ID, From: t.From, To: t.To, Amount: t.Amount, Currency: t.Currency, State: t.State.String(), At: at,
	}
	f.next = (f.next + 1) % feedCapacity
	f.n = min(f.n+1, feedCapacity)
}

// Recent returns up to n of the newest transfers, newest first.
func (f *LedgerFeed) Recent(n int) []TransferSummary {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = min(n, f.n)
	out := make([]TransferSummary, n)
	for i := range out {
		out[i] = f.ring[(f.next-1-i+feedCapacity)%feedCapacity]
	}
	return out
}
