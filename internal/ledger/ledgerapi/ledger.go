package ledgerapi

import (
	"context"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// Ledger is what the ledger routes need from the engine. Errors are
// *ledger.Error values (see ledger.CodeOf); any other error is a server fault.
type Ledger interface {
	// CreateAccount opens an account; created is false when an identical
	// account already existed.
	CreateAccount(ctx context.Context, spec ledger.AccountSpec) (acct ledger.Account, created bool, err error)
	Account(ctx context.Context, id string) (ledger.Account, error)
	// Transfer moves money; replayed is true when req.ID named an earlier
	// identical transfer, whose result is returned.
	Transfer(ctx context.Context, req ledger.TransferRequest) (t ledger.Transfer, replayed bool, err error)
	// TransferWith is Transfer that also writes the attached records in
	// the transfer's durable batch if the call makes it anew (the wallet's
	// chat message of a transfer; engine.CmdTransfer).
	TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (t ledger.Transfer, replayed bool, err error)
	// TransferBatch applies reqs; with atomic, all or none. It returns one
	// result per request, in order. err is set only for server faults.
	TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error)
	// PostPending posts a pending transfer; amount 0 posts all it holds.
	PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error)
	VoidPending(ctx context.Context, id string) (ledger.Transfer, error)
	GetTransfer(ctx context.Context, id string) (ledger.Transfer, error)
	History(ctx context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error)
	Stats(ctx context.Context) (ledger.Stats, error)
}
