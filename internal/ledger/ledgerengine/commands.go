package ledgerengine

import (
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// The ledger's commands: what a shard's Book applies (shard.Apply), each
// with the fields its outcome is written to.

// cmdCreateAccount opens an account.
type cmdCreateAccount struct {
	spec    ledger.AccountSpec
	account ledger.Account
	created bool
	err     error
}

// cmdTransfer makes a transfer debiting an account of the shard. Attached
// records are written in the same storage batch as the transfer when the
// command makes it anew, and never otherwise: another component's records
// that must be durable exactly when the transfer is (the wallet's chat
// message of a transfer).
type cmdTransfer struct {
	req      ledger.TransferRequest
	attached []store.Record
	// currencies are receivers' currencies sent along in a cluster.
	currencies map[string]string
	// binary: it came to a cluster's owner in binary, and its outcome
	// goes back so (wire.go).
	binary   bool
	transfer ledger.Transfer
	replayed bool
	err      error
}

// cmdBatch makes many transfers debiting accounts of the shard; with
// atomic, all or none.
type cmdBatch struct {
	reqs       []ledger.TransferRequest
	atomic     bool
	currencies map[string]string
	results    []ledger.BatchResult
}

// cmdPost posts a pending transfer (amount 0: all of it).
type cmdPost struct {
	id       string
	amount   int64
	transfer ledger.Transfer
	err      error
}

// cmdVoid voids a pending transfer.
type cmdVoid struct {
	id       string
	transfer ledger.Transfer
	err      error
}
