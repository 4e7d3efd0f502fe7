// Package ledger is surge's double-entry ledger: accounts, transfers,
// two-phase holds and history, as pure deterministic logic with no I/O.
//
// Money is an int64 count of minor units. It only enters the system by a
// transfer from a system account (an id starting with '@', such as @world),
// which may go negative without limit, so the sum of all balances of one
// currency is always zero.
package ledger

import "time"

// WorldID is the system account every deployment starts with; money enters
// the ledger by transfers from it.
const WorldID = "@world"

// Limits on what a request may carry. They keep records small and bound the
// total supply, so that no credit can overflow an int64 balance: system
// accounts cannot go below -MaxSupply and user overdrafts are at most
// MaxAmount each.
const (
	MaxIDLength       = 128
	MaxCurrencyLength = 12
	MaxMemoLength     = 512
	MaxMetadataKeys   = 16
	MaxMetadataLength = 256 // per key and per value
	MaxAmount         = 1<<53 - 1
	MaxSupply         = 1 << 62
	MaxBatch          = 8190
	MaxTimeout        = 7 * 24 * time.Hour
)

// IsSystem reports whether id names a system account, which may go negative
// without limit.
func IsSystem(id string) bool { return len(id) > 0 && id[0] == '@' }

// AccountSpec is what a client asks for when it opens an account.
type AccountSpec struct {
	ID             string
	Currency       string
	OverdraftLimit int64
	Metadata       map[string]string
}

// Account is the state of one account.
type Account struct {
	ID             string
	Currency       string
	OverdraftLimit int64
	Metadata       map[string]string
	CreatedAt      time.Time
	// Balance counts posted transfers only.
	Balance int64
	// Pending is the sum held by pending outgoing transfers.
	Pending int64
	// Entries is the number of history entries; entry seq numbers run 1..Entries.
	Entries uint64
	// Recent are the newest entries, oldest first, that storage keeps only
	// in its journal so far; older ones are in history chunks. The Book
	// appends to it and the engine empties it when it stores them as a
	// chunk. Copies of an Account share its bytes, which is why emptying
	// starts a new log rather than reusing the bytes: an entry a copy can
	// see is never written again.
	Recent EntryLog
}

// Available is the balance not held by pending transfers.
func (a *Account) Available() int64 { return a.Balance - a.Pending }

// System reports whether a is a system account.
func (a *Account) System() bool { return IsSystem(a.ID) }

// TransferRequest is what a client asks for when it moves money.
type TransferRequest struct {
	// ID is the idempotency key; empty means the server picks one.
	ID       string
	From     string
	To       string
	Amount   int64
	Currency string // optional; must match both accounts when given
	Memo     string
	// Pending makes a two-phase transfer that holds Amount on From until it
	// is posted, voided, or Timeout passes (0 means no timeout).
	Pending bool
	Timeout time.Duration
}

// TransferState is where a transfer is in its life.
type TransferState uint8

// Transfer states. Single-phase transfers are born Posted.
const (
	StatePosted TransferState = iota + 1
	StatePending
	StateVoided
	StateExpired
)

var stateNames = [...]string{StatePosted: "posted", StatePending: "pending", StateVoided: "voided", StateExpired: "expired"}

func (s TransferState) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return "unknown"
}

// Transfer is the record of one transfer.
type Transfer struct {
	ID       string
	From     string
	To       string
	Amount   int64 // as requested; for a pending transfer, the amount held
	Currency string
	Memo     string
	State    TransferState
	// TwoPhase is set for transfers created with Pending.
	TwoPhase bool
	Timeout  time.Duration
	// PostedAmount is what finally moved: Amount for single-phase transfers,
	// the posted part for two-phase ones, 0 while pending or when voided.
	PostedAmount int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// CurrencyGiven records whether the request named the currency, so that
	// an idempotent replay is compared against exactly what was asked.
	CurrencyGiven bool
}

// ExpiresAt is when a pending transfer's hold lapses; zero if never.
func (t *Transfer) ExpiresAt() time.Time {
	if !t.TwoPhase || t.Timeout == 0 {
		return time.Time{}
	}
	return t.CreatedAt.Add(t.Timeout)
}

// Direction tells whether a history entry took money out or put it in.
type Direction uint8

// History entry directions.
const (
	Debit Direction = iota + 1
	Credit
)

func (d Direction) String() string {
	if d == Debit {
		return "debit"
	}
	return "credit"
}

// Entry is one line of an account's history: one posted movement of money.
type Entry struct {
	Seq          uint64
	TransferID   string
	Direction    Direction
	Amount       int64
	BalanceAfter int64
	Counterpart  string
	Memo         string
	At           time.Time
}

// HistoryQuery selects a page of history, newest first. Cursor (the Seq of
// the last entry of the previous page) wins over Offset when both are set.
type HistoryQuery struct {
	Limit  int
	Cursor uint64
	Offset uint64
}

// Page limits for history queries.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// HistoryPage is one page of history; NextCursor is 0 on the last page.
type HistoryPage struct {
	Entries    []Entry
	NextCursor uint64
}

// BatchResult is the outcome of one item of a batch.
type BatchResult struct {
	Transfer Transfer
	Replayed bool
	Err      error // a *Error, or nil
}

// AbortedBatch is the outcome of an atomic batch of reqs whose item failed
// failed with err: that item carries err, every other one batch_aborted.
func AbortedBatch(reqs []TransferRequest, failed int, err error) []BatchResult {
	res := make([]BatchResult, len(reqs))
	for i, r := range reqs {
		res[i].Transfer.ID = r.ID
		res[i].Err = Errorf(CodeBatchAborted, "not applied: item %d failed", failed)
	}
	res[failed].Err = err
	return res
}

// Stats summarises the whole ledger.
type Stats struct {
	Accounts int64
	// BalanceSum maps a currency to the sum of balances in it; always 0
	// in one process. In a cluster it is the sum of the partitions'
	// balances, and CreditsInFlight the credits their transfers forwarded
	// that the receiving partitions have not applied yet: the two sum to 0.
	BalanceSum      map[string]int64
	CreditsInFlight map[string]int64
}

// CreditSums are the credits one shard of a cluster forwarded to other
// shards (Sent) and applied from them (Received), by currency.
type CreditSums struct {
	Sent     map[string]int64
	Received map[string]int64
}
