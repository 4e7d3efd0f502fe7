package ledger

import (
	"container/heap"
	"fmt"
	"maps"
	"time"
)

// Lookup is how a Book sees transfers it does not hold in memory: those
// already committed to storage, and the ids other shards are creating right
// now. It is the Book's only window on the world beyond its own accounts.
type Lookup interface {
	// Transfer returns the committed transfer with id.
	Transfer(id string) (Transfer, bool, error)
	// Claim reserves a client-chosen transfer id for this shard until the
	// batch creating it is durable and storage answers for it. It returns
	// false if another shard holds it.
	Claim(id string) bool
	// Release gives up a claim whose transfer was not created.
	Release(id string)
	// Currency returns the currency of any account in the ledger, whichever
	// shard owns it. Accounts are never deleted and never change currency, so
	// an answer once given stays true.
	Currency(id string) (string, bool)
	// NewID returns a fresh server-chosen transfer id.
	NewID() string
}

// CreditLeg is the second leg of a transfer whose receiver lives on another
// shard: the debit has committed, and the credit must follow exactly once.
type CreditLeg struct {
	TransferID string
	From       string
	To         string
	Amount     int64
	Memo       string
	At         time.Time
}

// Changes are the effects of the commands applied since the last Reset,
// for the engine to persist in one storage batch.
type Changes struct {
	// Accounts are the accounts changed, each once. Only Opened ones need
	// writing: a balance is in the account's newest history entry and its
	// pending sum is that of its open holds, so storage derives them.
	Accounts  []*Account
	Opened    []*Account
	Transfers []*Transfer
	// Journal is the history entries made, JournalEntries of them, as
	// journal items (ReadJournal decodes them): storage writes it as the
	// shard batch's journal record as it is.
	Journal        []byte
	JournalEntries int
	// Credits are the second legs of transfers to accounts of other
	// shards, for the engine to apply to their Books.
	Credits []CreditLeg
	// HoldsOpened and HoldsClosed track the pending-transfer index.
	HoldsOpened []string
	HoldsClosed []string
}

// AccountEntry is a history Entry with the account it belongs to.
type AccountEntry struct {
	Account string
	Entry
}

// Book is one shard's part of the ledger: the accounts it owns and the
// pending transfers that debit them. It is not safe for concurrent use; a
// single shard goroutine owns it, which is what makes it lock-free.
type Book struct {
	lookup   Lookup
	accounts map[string]*Account
	// list holds the accounts in the order they came, for sweeps.
	list  []*Account
	dirty map[*Account]struct{}
	// pending holds open two-phase transfers by id; expiries orders those
	// with a timeout by deadline (entries may be stale: checked on pop).
	pending  map[string]*Transfer
	expiries expiryHeap
	// recent are transfers written since Reset, which Lookup cannot see yet.
	recent map[string]*Transfer
	// batchPeak is the most entries dirty or recent held in one batch
	// since they were made.
	batchPeak int
	changes   Changes
	// undo, when non-nil, records how to reverse each change of an open
	// atomic group, newest last.
	undo []func()
}

// NewBook returns an empty Book that consults lookup.
func NewBook(lookup Lookup) *Book {
	return &Book{
		lookup:   lookup,
		accounts: make(map[string]*Account),
		dirty:    make(map[*Account]struct{}),
		pending:  make(map[string]*Transfer),
		recent:   make(map[string]*Transfer),
	}
}

// Load puts a stored account into the Book, as recovery does on start.
func (b *Book) Load(a Account) {
	b.accounts[a.ID] = &a
	b.list = append(b.list, &a)
}

// Accounts returns every account of the Book, oldest first. The slice and
// the accounts are the Book's own: for its owner's goroutine only, and the
// slice only until the next change.
func (b *Book) Accounts() []*Account { return b.list }

// Replay appends e, an entry read back from storage's journal, to its
// account as the newest entry, unless storage's history already held it.
func (b *Book) Replay(e *AccountEntry) error {
	a, ok := b.accounts[e.Account]
	switch {
	case !ok:
		return fmt.Errorf("ledger: journal entry for unknown account %s", e.Account)
	case e.Seq <= a.Entries:
		return nil
	case e.Seq != a.Entries+1:
		return fmt.Errorf("ledger: journal skips from entry %d to %d of account %s", a.Entries, e.Seq, e.Account)
	}
	a.Entries, a.Balance = e.Seq, e.BalanceAfter
	a.Recent.Append(&e.Entry)
	return nil
}

// LoadPending puts a stored pending transfer back into the Book.
func (b *Book) LoadPending(t Transfer) {
	p := &t
	b.pending[t.ID] = p
	if t.Timeout > 0 {
		heap.Push(&b.expiries, p)
	}
}

// Account returns a copy of the account id if this Book owns it.
func (b *Book) Account(id string) (Account, bool) {
	a, ok := b.accounts[id]
	if !ok {
		return Account{}, false
	}
	return *a, true
}

// Currency returns the currency of the account id of this Book, or "" if
// the Book has no such account.
func (b *Book) Currency(id string) string {
	if a, ok := b.accounts[id]; ok {
		return a.Currency
	}
	return ""
}

// Changes returns the effects accumulated since the last Reset.
func (b *Book) Changes() *Changes { return &b.changes }

// Reset forgets the accumulated changes once they are durable.
func (b *Book) Reset() {
	// Clearing a map costs its capacity, not its length, and a map never
	// shrinks: after one batch that touched many accounts (a setup opening
	// tens of thousands of them), every later Reset would pay for all of
	// them on the shard's path, however small its batch. Maps far larger
	// than the batches now using them are made anew instead.
	n := max(len(b.dirty), len(b.recent))
	if b.batchPeak > 1024 && n < b.batchPeak/8 {
		b.dirty = make(map[*Account]struct{}, n)
		b.recent = make(map[string]*Transfer, n)
		b.batchPeak = n
	} else {
		clear(b.dirty)
		clear(b.recent)
		b.batchPeak = max(b.batchPeak, n)
	}
	c := &b.changes
	c.Accounts = c.Accounts[:0]
	c.Opened = c.Opened[:0]
	c.Transfers = c.Transfers[:0]
	c.Journal, c.JournalEntries = c.Journal[:0], 0
	c.Credits = c.Credits[:0]
	c.HoldsOpened = c.HoldsOpened[:0]
	c.HoldsClosed = c.HoldsClosed[:0]
}

// CreateAccount opens an account. An existing account with the same
// attributes is returned with created false; one with other attributes is an
// account_exists error.
func (b *Book) CreateAccount(spec AccountSpec, now time.Time) (Account, bool, error) {
	if a, ok := b.accounts[spec.ID]; ok {
		if a.Currency != spec.Currency || a.OverdraftLimit != spec.OverdraftLimit || !sameMetadata(a.Metadata, spec.Metadata) {
			return Account{}, false, Errorf(CodeAccountExists, "account %s exists with other attributes", spec.ID)
		}
		return *a, false, nil
	}
	a := &Account{
		ID:             spec.ID,
		Currency:       spec.Currency,
		OverdraftLimit: spec.OverdraftLimit,
		Metadata:       maps.Clone(spec.Metadata),
		CreatedAt:      now,
	}
	b.accounts[a.ID] = a
	b.list = append(b.list, a)
	if b.grouping() {
		b.logUndo(func() {
			delete(b.accounts, a.ID)
			b.list = b.list[:len(b.list)-1]
		})
	}
	b.touch(a)
	b.changes.Opened = append(b.changes.Opened, a)
	return *a, true, nil
}

func sameMetadata(a, b map[string]string) bool {
	return len(a) == len(b) && maps.Equal(a, b)
}

// Transfer applies a single- or two-phase transfer debiting an account of
// this Book. A replay of an earlier identical request returns its result
// with replayed true.
func (b *Book) Transfer(req TransferRequest, now time.Time) (t Transfer, replayed bool, err error) {
	if req.ID != "" {
		prev, found, err := b.claimOrFind(req.ID)
		if err != nil || found {
			return b.replay(prev, req, err)
		}
	}
	from, to, err := b.checkTransfer(req)
	if err != nil {
		b.unclaim(req.ID)
		return Transfer{}, false, err
	}
	if req.ID == "" {
		req.ID = b.lookup.NewID()
	}
	rec := &Transfer{
		ID: req.ID, From: req.From, To: req.To, Amount: req.Amount,
		Currency: from.Currency, CurrencyGiven: req.Currency != "", Memo: req.Memo,
		TwoPhase: req.Pending, Timeout: req.Timeout, CreatedAt: now, UpdatedAt: now,
	}
	if req.Pending {
		rec.State = StatePending
		b.hold(from, rec)
	} else {
		rec.State = StatePosted
		rec.PostedAmount = req.Amount
		b.move(from, to, rec, req.Amount, now)
	}
	b.record(rec)
	return *rec, false, nil
}

// claimOrFind looks for an existing transfer with a client-chosen id and,
// if there is none, claims the id so no other shard can create it. The
// claim comes before the storage lookup: a shard that created the id
// releases its claim only once storage answers for it.
func (b *Book) claimOrFind(id string) (Transfer, bool, error) {
	if t, ok := b.recent[id]; ok {
		return *t, true, nil
	}
	if t, ok := b.pending[id]; ok {
		return *t, true, nil
	}
	if !b.lookup.Claim(id) {
		return Transfer{}, false, Errorf(CodeIdempotencyConflict, "transfer %s is being created with another body", id)
	}
	t, found, err := b.lookup.Transfer(id)
	if err != nil || found {
		b.lookup.Release(id)
		return t, found, err
	}
	if b.grouping() {
		b.logUndo(func() { b.lookup.Release(id) })
	}
	return Transfer{}, false, nil
}

// replay answers a request whose id names an existing transfer: its result
// again if the request is the same, a conflict otherwise.
func (b *Book) replay(prev Transfer, req TransferRequest, err error) (Transfer, bool, error) {
	switch {
	case err != nil:
		return Transfer{}, false, err
	case !prev.Matches(req):
		return Transfer{}, false, Errorf(CodeIdempotencyConflict, "transfer %s exists with another body", req.ID)
	default:
		return prev, true, nil
	}
}

// unclaim gives up the claim on a client-chosen id whose request failed.
func (b *Book) unclaim(id string) {
	if id == "" {
		return
	}
	if b.grouping() {
		b.undo = b.undo[:len(b.undo)-1]
	}
	b.lookup.Release(id)
}

// checkTransfer validates req against the Book's state and returns the
// account to debit and the account to credit, nil if another shard's.
func (b *Book) checkTransfer(req TransferRequest) (from, to *Account, err error) {
	if req.From == req.To {
		return nil, nil, Errorf(CodeSameAccount, "from and to are both %s", req.From)
	}
	if req.Amount <= 0 || req.Amount > MaxAmount {
		return nil, nil, Errorf(CodeInvalidArgument, "amount must be between 1 and %d", int64(MaxAmount))
	}
	from, ok := b.accounts[req.From]
	if !ok {
		return nil, nil, Errorf(CodeAccountNotFound, "account %s not found", req.From)
	}
	to, toCurrency, ok := b.receiver(req.To)
	if !ok {
		return nil, nil, Errorf(CodeAccountNotFound, "account %s not found", req.To)
	}
	if toCurrency != from.Currency {
		return nil, nil, Errorf(CodeCurrencyMismatch, "%s holds %s, %s holds %s", req.From, from.Currency, req.To, toCurrency)
	}
	if req.Currency != "" && req.Currency != from.Currency {
		return nil, nil, Errorf(CodeCurrencyMismatch, "transfer in %s between %s accounts", req.Currency, from.Currency)
	}
	if !canSpend(from, req.Amount) {
		return nil, nil, Errorf(CodeInsufficientFunds, "account %s has %d available, needs %d", from.ID, from.Available(), req.Amount)
	}
	return from, to, nil
}

// receiver finds the account id and its currency: this Book's own
// (including those opened in the current batch), or only the currency,
// through Lookup, of another shard's.
func (b *Book) receiver(id string) (a *Account, currency string, ok bool) {
	if a, ok := b.accounts[id]; ok {
		return a, a.Currency, true
	}
	currency, ok = b.lookup.Currency(id)
	return nil, currency, ok
}

// canSpend reports whether a may be debited amount more, holds included.
func canSpend(a *Account, amount int64) bool {
	floor := -a.OverdraftLimit
	if a.System() {
		floor = -MaxSupply
	}
	return a.Balance-a.Pending-amount >= floor
}

// hold reserves rec.Amount on from for a pending transfer.
func (b *Book) hold(from *Account, rec *Transfer) {
	b.touch(from)
	from.Pending += rec.Amount
	b.pending[rec.ID] = rec
	if b.grouping() {
		b.logUndo(func() { delete(b.pending, rec.ID) })
	}
	if rec.Timeout > 0 {
		heap.Push(&b.expiries, rec)
	}
	b.changes.HoldsOpened = append(b.changes.HoldsOpened, rec.ID)
}

// move debits from by amount and credits rec.To: to, this Book's account,
// or, if to is nil, through a CreditLeg for the receiver's shard.
func (b *Book) move(from, to *Account, rec *Transfer, amount int64, now time.Time) {
	debit := b.entry(from, Debit, amount, rec, rec.To, now)
	c := &b.changes
	if to != nil {
		credit := b.entry(to, Credit, amount, rec, rec.From, now)
		c.Journal = appendJournalPair(c.Journal, from.ID, to.ID, &debit, &credit)
		c.JournalEntries += 2
		return
	}
	b.journal(from.ID, &debit)
	c.Credits = append(c.Credits, CreditLeg{
		TransferID: rec.ID, From: rec.From, To: rec.To, Amount: amount, Memo: rec.Memo, At: now,
	})
}

// entry changes a's balance and appends the matching history entry to its
// log; the caller journals it.
func (b *Book) entry(a *Account, dir Direction, amount int64, rec *Transfer, counterpart string, now time.Time) Entry {
	b.touch(a)
	if dir == Debit {
		a.Balance -= amount
	} else {
		if a.Balance > MaxSupply+MaxAmount-amount {
			// Unreachable while MaxSupply and MaxAmount bound the money in
			// the ledger; continuing would corrupt balances.
			panic("ledger: credit overflows balance of " + a.ID)
		}
		a.Balance += amount
	}
	a.Entries++
	e := Entry{
		Seq: a.Entries, TransferID: rec.ID, Direction: dir, Amount: amount,
		BalanceAfter: a.Balance, Counterpart: counterpart, Memo: rec.Memo, At: now,
	}
	a.Recent.Append(&e)
	return e
}

// journal adds e, an entry of account, to the batch's journal as an item of
// its own.
func (b *Book) journal(account string, e *Entry) {
	c := &b.changes
	c.Journal = AppendJournalItem(c.Journal, account, e)
	c.JournalEntries++
}

// ApplyCredit applies the second leg of a cross-shard transfer. The engine
// applies each CreditLeg exactly once, in the round of its debit.
func (b *Book) ApplyCredit(c CreditLeg) {
	to, ok := b.accounts[c.To]
	if !ok {
		// The debit side checked the receiver, and accounts are never deleted.
		panic("ledger: credit for unknown account " + c.To)
	}
	rec := &Transfer{ID: c.TransferID, Memo: c.Memo}
	e := b.entry(to, Credit, c.Amount, rec, c.From, c.At)
	b.journal(to.ID, &e)
}

// Post moves amount (0: all of it) of a pending transfer's hold to its
// receiver and releases the rest.
func (b *Book) Post(id string, amount int64, now time.Time) (Transfer, error) {
	rec, err := b.openHold(id)
	if err != nil {
		return Transfer{}, err
	}
	if amount == 0 {
		amount = rec.Amount
	}
	if amount < 0 || amount > rec.Amount {
		return Transfer{}, Errorf(CodeExceedsPending, "transfer %s holds %d, cannot post %d", id, rec.Amount, amount)
	}
	from := b.release(rec, StatePosted, now)
	rec.PostedAmount = amount
	b.move(from, b.accounts[rec.To], rec, amount, now)
	return *rec, nil
}

// Void releases a pending transfer's hold.
func (b *Book) Void(id string, now time.Time) (Transfer, error) {
	rec, err := b.openHold(id)
	if err != nil {
		return Transfer{}, err
	}
	b.release(rec, StateVoided, now)
	return *rec, nil
}

// Expire releases every hold whose deadline is at or before now and returns
// the transfers it expired.
func (b *Book) Expire(now time.Time) []Transfer {
	var out []Transfer
	for len(b.expiries) > 0 {
		next := b.expiries[0]
		if b.pending[next.ID] != next {
			heap.Pop(&b.expiries) // posted or voided since
			continue
		}
		if next.ExpiresAt().After(now) {
			break
		}
		heap.Pop(&b.expiries)
		b.release(next, StateExpired, now)
		out = append(out, *next)
	}
	return out
}

// NextExpiry returns the earliest deadline of an open hold, or zero.
func (b *Book) NextExpiry() time.Time {
	for len(b.expiries) > 0 {
		next := b.expiries[0]
		if b.pending[next.ID] == next {
			return next.ExpiresAt()
		}
		heap.Pop(&b.expiries)
	}
	return time.Time{}
}

// openHold finds the pending transfer id, owned by this Book.
func (b *Book) openHold(id string) (*Transfer, error) {
	if rec, ok := b.pending[id]; ok {
		return rec, nil
	}
	t, found, err := b.lookup.Transfer(id)
	if r, ok := b.recent[id]; ok {
		t, found, err = *r, true, nil
	}
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, Errorf(CodeTransferNotFound, "transfer %s not found", id)
	default:
		return nil, Errorf(CodeTransferNotPending, "transfer %s is %s", id, t.State)
	}
}

// release ends rec's hold with the given final state and returns the
// account that held it.
func (b *Book) release(rec *Transfer, state TransferState, now time.Time) *Account {
	from := b.accounts[rec.From]
	b.touch(from)
	from.Pending -= rec.Amount
	if b.grouping() {
		prev := *rec
		b.logUndo(func() { *rec = prev; b.pending[rec.ID] = rec })
	}
	delete(b.pending, rec.ID)
	rec.State = state
	rec.UpdatedAt = now
	b.changes.HoldsClosed = append(b.changes.HoldsClosed, rec.ID)
	b.record(rec)
	return from
}

// record queues rec to be written and makes it visible to later commands.
func (b *Book) record(rec *Transfer) {
	b.recent[rec.ID] = rec
	if b.grouping() {
		b.logUndo(func() { delete(b.recent, rec.ID) })
	}
	b.changes.Transfers = append(b.changes.Transfers, rec)
}

// touch marks a as changed, saving its state first inside an atomic group.
// Only what changes is saved and restored: an account's ID, currency,
// limit, metadata and creation time are written once, before it is
// shown, and readers of the ledger's committed view read them from the
// Book's account while the shard goes on changing the rest.
func (b *Book) touch(a *Account) {
	if b.grouping() {
		prev := accountState{a.Balance, a.Pending, a.Entries, a.Recent}
		b.logUndo(func() {
			a.Balance, a.Pending, a.Entries, a.Recent = prev.balance, prev.pending, prev.entries, prev.recent
		})
	}
	if _, ok := b.dirty[a]; !ok {
		b.dirty[a] = struct{}{}
		b.changes.Accounts = append(b.changes.Accounts, a)
	}
}

// accountState is what transfers change in an Account.
type accountState struct {
	balance, pending int64
	entries          uint64
	recent           EntryLog
}

// grouping reports whether an atomic group is open, so that every change
// must log how to undo it. Callers test it before they build the undo
// closure: one built anyway escapes to the heap, an allocation per transfer
// outside any group (go build -gcflags=-m).
func (b *Book) grouping() bool { return b.undo != nil }

// logUndo records how to undo a change made inside an atomic group.
func (b *Book) logUndo(f func()) { b.undo = append(b.undo, f) }

// Begin opens an atomic group: until Commit or Rollback, every change can be
// undone.
func (b *Book) Begin() Savepoint {
	b.undo = make([]func(), 0, 16)
	c := &b.changes
	return Savepoint{len(c.Accounts), len(c.Transfers), len(c.Journal), c.JournalEntries, len(c.Credits), len(c.HoldsOpened), len(c.HoldsClosed), len(c.Opened)}
}

// Savepoint is the extent of the Changes when an atomic group began.
type Savepoint [8]int

// Commit closes the atomic group, keeping its changes.
func (b *Book) Commit() { b.undo = nil }

// Rollback reverses every change since Begin.
func (b *Book) Rollback(sp Savepoint) {
	for i := len(b.undo) - 1; i >= 0; i-- {
		b.undo[i]()
	}
	b.undo = nil
	c := &b.changes
	for _, a := range c.Accounts[sp[0]:] {
		delete(b.dirty, a)
	}
	c.Accounts, c.Transfers, c.Journal, c.JournalEntries = c.Accounts[:sp[0]], c.Transfers[:sp[1]], c.Journal[:sp[2]], sp[3]
	c.Credits, c.HoldsOpened, c.HoldsClosed, c.Opened = c.Credits[:sp[4]], c.HoldsOpened[:sp[5]], c.HoldsClosed[:sp[6]], c.Opened[:sp[7]]
}

// Matches reports whether req asks for exactly the transfer t records, so
// that a retry with the same idempotency key can be told from a conflict.
func (t *Transfer) Matches(req TransferRequest) bool {
	currencyOK := req.Currency == "" && !t.CurrencyGiven || req.Currency != "" && t.CurrencyGiven && req.Currency == t.Currency
	return t.From == req.From && t.To == req.To && t.Amount == req.Amount && t.Memo == req.Memo &&
		t.TwoPhase == req.Pending && t.Timeout == req.Timeout && currencyOK
}

// expiryHeap orders pending transfers by deadline.
type expiryHeap []*Transfer

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].ExpiresAt().Before(h[j].ExpiresAt()) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(*Transfer)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
