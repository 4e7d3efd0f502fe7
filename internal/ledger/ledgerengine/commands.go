package ledgerengine

import (
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// The ledger's commands: one type per operation, with its arguments and,
// once a shard applied it (shard.Apply), its outcome. A single process's
// API queues them on its shards (api.go); in a cluster they travel to the
// owner of their shard's partition and their outcomes back (wire.go).
// Err is the domain error (a *ledger.Error) the client hears, or a fault.

// Op names a ledger operation on the wire.
type Op uint8

// Operations. A transfer and a credit keep the kind bytes they had when
// only they travelled in binary, so that those still in a log decode.
const (
	OpTransfer Op = iota + 1
	OpCredit
	OpCreateAccount
	OpBatch
	OpAccount
	OpGetTransfer
	OpHistory
	OpStats
	OpPost
	OpVoid
	OpAtomicPrepare
	OpAtomicCommit
	OpAtomicAbort
)

// ReadOnly reports whether an operation changes nothing: sent twice, it
// does no more than once.
func (o Op) ReadOnly() bool {
	return o == OpAccount || o == OpGetTransfer || o == OpHistory || o == OpStats
}

// Command is a ledger command: one of the types below.
type Command interface {
	engine.Command
	// Op is the command's operation.
	Op() Op
	// args and outcome encode or decode the arguments and the outcome.
	args(w wire)
	outcome(w wire)
}

// The commands, each with its arguments and its outcome.
type (
	// CreateAccount opens an account.
	CreateAccount struct {
		Spec    ledger.AccountSpec
		Account ledger.Account
		Created bool
		Err     error
	}
	// Transfer makes a transfer debiting an account of the shard. In a
	// cluster Currency is the receiver's, checked by the sender. Attached
	// records, a single process's only, are written in the same storage
	// batch as the transfer when the command makes it anew, and never
	// otherwise: another component's records that must be durable exactly
	// when the transfer is (the wallet's chat message of a transfer).
	Transfer struct {
		Req      ledger.TransferRequest
		Currency string
		Transfer ledger.Transfer
		Replayed bool
		Err      error
		attached []store.Record
	}
	// Batch makes many transfers debiting accounts of the shard; with
	// Atomic, all or none. Currencies are the receivers', in a cluster.
	Batch struct {
		Reqs       []ledger.TransferRequest
		Atomic     bool
		Currencies map[string]string
		Results    []ledger.BatchResult
	}
	// Post posts a pending transfer (Amount 0: all of it).
	Post struct {
		ID       string
		Amount   int64
		Transfer ledger.Transfer
		Err      error
	}
	// Void voids a pending transfer.
	Void struct {
		ID       string
		Transfer ledger.Transfer
		Err      error
	}
	// Credit applies, in a cluster, a credit another shard forwarded.
	Credit struct{ Leg ledger.CreditLeg }
	// ReadAccount reads an account as of the round.
	ReadAccount struct {
		ID      string
		Account ledger.Account
		Err     error
	}
	// GetTransfer reads a transfer the shard's accounts debited.
	GetTransfer struct {
		ID       string
		Transfer ledger.Transfer
		Err      error
	}
	// History reads a page of an account's history.
	History struct {
		ID    string
		Query ledger.HistoryQuery
		Page  ledger.HistoryPage
		Err   error
	}
	// Stats reads the shard's totals.
	Stats struct{ Stats ShardStats }
	// Atomic is a step of an atomic batch across a cluster's shards
	// (atomic.go): Step is OpAtomicPrepare, OpAtomicCommit or
	// OpAtomicAbort. Results, the outcome, go to the client from the shard
	// that decided the batch (Reply).
	Atomic struct {
		Step    Op
		Batch   AtomicBatch
		Results []WireResult
	}
)

// ShardStats are one shard's totals: its accounts, their balances and its
// credit sums.
type ShardStats struct {
	Accounts int64
	Balances map[string]int64
	Credits  ledger.CreditSums
}

// WireResult is one item of an atomic batch's outcome across shards.
type WireResult struct {
	Transfer ledger.Transfer
	Replayed bool
	Err      *ledger.Error
}

func (*CreateAccount) Op() Op { return OpCreateAccount }
func (*Transfer) Op() Op      { return OpTransfer }
func (*Batch) Op() Op         { return OpBatch }
func (*Post) Op() Op          { return OpPost }
func (*Void) Op() Op          { return OpVoid }
func (*Credit) Op() Op        { return OpCredit }
func (*ReadAccount) Op() Op   { return OpAccount }
func (*GetTransfer) Op() Op   { return OpGetTransfer }
func (*History) Op() Op       { return OpHistory }
func (*Stats) Op() Op         { return OpStats }
func (c *Atomic) Op() Op      { return c.Step }

func (c *CreateAccount) args(w wire) { w.spec(&c.Spec) }
func (c *CreateAccount) outcome(w wire) {
	w.account(&c.Account)
	w.Bool(&c.Created)
	w.err(&c.Err)
}
func (c *Transfer) args(w wire) { w.request(&c.Req); w.Str(&c.Currency) }
func (c *Transfer) outcome(w wire) {
	if w.D != nil {
		// The transfer made repeats the request's strings: decoded as
		// those, its reply allocates none of them.
		c.Transfer = ledger.Transfer{ID: c.Req.ID, From: c.Req.From, To: c.Req.To, Currency: c.Currency, Memo: c.Req.Memo}
	}
	w.transfer(&c.Transfer)
	w.Bool(&c.Replayed)
	w.err(&c.Err)
}
func (c *Batch) args(w wire) {
	w.requests(&c.Reqs)
	w.Bool(&c.Atomic)
	w.strMap(&c.Currencies)
}
func (c *Batch) outcome(w wire)       { w.batchResults(&c.Results) }
func (c *Post) args(w wire)           { w.Str(&c.ID); w.Int64(&c.Amount) }
func (c *Post) outcome(w wire)        { w.transfer(&c.Transfer); w.err(&c.Err) }
func (c *Void) args(w wire)           { w.Str(&c.ID) }
func (c *Void) outcome(w wire)        { w.transfer(&c.Transfer); w.err(&c.Err) }
func (c *Credit) args(w wire)         { w.credit(&c.Leg) }
func (*Credit) outcome(wire)          {}
func (c *ReadAccount) args(w wire)    { w.Str(&c.ID) }
func (c *ReadAccount) outcome(w wire) { w.account(&c.Account); w.err(&c.Err) }
func (c *GetTransfer) args(w wire)    { w.Str(&c.ID) }
func (c *GetTransfer) outcome(w wire) { w.transfer(&c.Transfer); w.err(&c.Err) }
func (c *History) args(w wire)        { w.Str(&c.ID); w.query(&c.Query) }
func (c *History) outcome(w wire)     { w.page(&c.Page); w.err(&c.Err) }
func (*Stats) args(wire)              {}
func (c *Stats) outcome(w wire)       { w.stats(&c.Stats) }
func (c *Atomic) args(w wire)         { w.atomicBatch(&c.Batch) }
func (c *Atomic) outcome(w wire)      { w.results(&c.Results) }

// newCommand returns an empty command of op, nil for an unknown op.
func newCommand(op Op) Command {
	switch op {
	case OpCreateAccount:
		return &CreateAccount{}
	case OpTransfer:
		return &Transfer{}
	case OpBatch:
		return &Batch{}
	case OpPost:
		return &Post{}
	case OpVoid:
		return &Void{}
	case OpCredit:
		return &Credit{}
	case OpAccount:
		return &ReadAccount{}
	case OpGetTransfer:
		return &GetTransfer{}
	case OpHistory:
		return &History{}
	case OpStats:
		return &Stats{}
	case OpAtomicPrepare, OpAtomicCommit, OpAtomicAbort:
		return &Atomic{Step: op}
	}
	return nil
}
