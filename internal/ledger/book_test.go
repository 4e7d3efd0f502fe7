package ledger

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"
)

// world is what every Book of a test sees through its Lookup: storage
// (committed transfers), the claims table shared by all shards, and the
// currency of every committed account.
type world struct {
	transfers map[string]Transfer
	claims    map[string]int // id → owning view
	currency  map[string]string
	seq       int
}

func newWorld() *world {
	return &world{transfers: map[string]Transfer{}, claims: map[string]int{}, currency: map[string]string{}}
}

// view is one Book's Lookup onto the world.
type view struct {
	w     *world
	owner int
	// refuse makes Claim fail for these ids, as if another shard held them.
	refuse map[string]bool
	// transferErr makes Transfer fail, as a storage error would.
	transferErr error
	// beforeClaim runs at the start of each Claim.
	beforeClaim func(id string)
}

func (w *world) view(owner int) *view { return &view{w: w, owner: owner, refuse: map[string]bool{}} }

func (v *view) Transfer(id string) (Transfer, bool, error) {
	if v.transferErr != nil {
		return Transfer{}, false, v.transferErr
	}
	t, ok := v.w.transfers[id]
	return t, ok, nil
}

func (v *view) Claim(id string) bool {
	if v.beforeClaim != nil {
		v.beforeClaim(id)
	}
	if v.refuse[id] {
		return false
	}
	if _, taken := v.w.claims[id]; taken {
		return false
	}
	v.w.claims[id] = v.owner
	return true
}

func (v *view) Release(id string) { delete(v.w.claims, id) }

func (v *view) Currency(id string) (string, bool) {
	c, ok := v.w.currency[id]
	return c, ok
}

func (v *view) NewID() string {
	v.w.seq++
	return fmt.Sprintf("srv-%d", v.w.seq)
}

// commit does what the engine does once a Book's changes are durable:
// storage answers for its transfers and accounts, its claims are freed, and
// its credits leave for their shards. It returns those credits.
func (w *world) commit(b *Book) []CreditLeg {
	ch := b.Changes()
	for _, t := range ch.Transfers {
		w.transfers[t.ID] = *t
	}
	for _, a := range ch.Accounts {
		w.currency[a.ID] = a.Currency
	}
	for _, t := range ch.Transfers {
		delete(w.claims, t.ID)
	}
	credits := slices.Clone(ch.Credits)
	b.Reset()
	return credits
}

var t0 = time.Date(2026, 11, 22, 5, 30, 0, 123456789, time.UTC)

func newTestBook(t *testing.T) (*Book, *view, *world) {
	t.Helper()
	w := newWorld()
	v := w.view(0)
	b := NewBook(v)
	mustCreate(t, b, AccountSpec{ID: WorldID, Currency: "USD"})
	return b, v, w
}

func mustCreate(t *testing.T, b *Book, spec AccountSpec) Account {
	t.Helper()
	a, created, err := b.CreateAccount(spec, t0)
	if err != nil || !created {
		t.Fatalf("CreateAccount(%s) = created %v, %v", spec.ID, created, err)
	}
	return a
}

func mustTransfer(t *testing.T, b *Book, req TransferRequest, now time.Time) Transfer {
	t.Helper()
	tr, replayed, err := b.Transfer(req, now)
	if err != nil || replayed {
		t.Fatalf("Transfer(%+v) = replayed %v, %v", req, replayed, err)
	}
	return tr
}

func fund(t *testing.T, b *Book, id string, amount int64) {
	t.Helper()
	mustTransfer(t, b, TransferRequest{From: WorldID, To: id, Amount: amount, Memo: "funding"}, t0)
}

func wantCode(t *testing.T, err error, want Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", want)
	}
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("err = %v (%T), want a *ledger.Error with %s", err, err, want)
	}
	if le.Code != want {
		t.Fatalf("err = %v, want code %s", err, want)
	}
	if le.Detail == "" {
		t.Errorf("err %s has an empty detail", le.Code)
	}
}

func account(t *testing.T, b *Book, id string) Account {
	t.Helper()
	a, ok := b.Account(id)
	if !ok {
		t.Fatalf("account %s not in the book", id)
	}
	return a
}

func wantBalance(t *testing.T, b *Book, id string, balance, pending int64) {
	t.Helper()
	a := account(t, b, id)
	if a.Balance != balance || a.Pending != pending {
		t.Fatalf("%s: balance %d pending %d, want %d and %d", id, a.Balance, a.Pending, balance, pending)
	}
}

// changeLens is the length of every list of a Book's Changes.
func changeLens(b *Book) [8]int {
	c := b.Changes()
	return [8]int{len(c.Accounts), len(c.Opened), len(c.Transfers), c.JournalEntries, len(c.Credits),
		len(c.HoldsOpened), len(c.HoldsClosed), len(b.recent)}
}

// snapshot is a Book's observable state, deep enough to compare.
type snapshot struct {
	accounts map[string]Account
	pending  map[string]Transfer
	lens     [8]int
	next     time.Time
}

func snap(b *Book) snapshot {
	s := snapshot{accounts: map[string]Account{}, pending: map[string]Transfer{}, lens: changeLens(b), next: b.NextExpiry()}
	for id, a := range b.accounts {
		s.accounts[id] = *a
	}
	for id, t := range b.pending {
		s.pending[id] = *t
	}
	return s
}

func sameSnapshot(t *testing.T, what string, got, want snapshot) {
	t.Helper()
	if !reflect.DeepEqual(got.accounts, want.accounts) {
		t.Errorf("%s: accounts changed:\n got %+v\nwant %+v", what, got.accounts, want.accounts)
	}
	if !reflect.DeepEqual(got.pending, want.pending) {
		t.Errorf("%s: pending transfers changed:\n got %+v\nwant %+v", what, got.pending, want.pending)
	}
	if got.lens != want.lens {
		t.Errorf("%s: changes lengths %v, want %v", what, got.lens, want.lens)
	}
	if !got.next.Equal(want.next) {
		t.Errorf("%s: next expiry %v, want %v", what, got.next, want.next)
	}
}

// entriesOf returns the entries in the Book's Changes for transfer id.
func entriesOf(b *Book, id string) []AccountEntry {
	var out []AccountEntry
	for _, e := range journalItems(b.Changes()) {
		if e.TransferID == id {
			out = append(out, e)
		}
	}
	return out
}

func TestCreateAccount(t *testing.T) {
	b, _, _ := newTestBook(t)
	b.Reset()
	meta := map[string]string{"tier": "gold"}
	spec := AccountSpec{ID: "alice", Currency: "USD", OverdraftLimit: 5, Metadata: meta}
	a, created, err := b.CreateAccount(spec, t0)
	if err != nil || !created {
		t.Fatalf("create: created %v, %v", created, err)
	}
	want := Account{ID: "alice", Currency: "USD", OverdraftLimit: 5, Metadata: map[string]string{"tier": "gold"}, CreatedAt: t0}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("create returned %+v, want %+v", a, want)
	}
	if a.System() || a.Available() != 0 {
		t.Errorf("alice: system %v available %d", a.System(), a.Available())
	}
	ch := b.Changes()
	if len(ch.Accounts) != 1 || ch.Accounts[0].ID != "alice" || len(ch.Opened) != 1 || ch.Opened[0].ID != "alice" {
		t.Fatalf("changes after create: accounts %v opened %v", ch.Accounts, ch.Opened)
	}

	// The account keeps its own copy of the metadata.
	meta["tier"] = "silver"
	if got := account(t, b, "alice").Metadata["tier"]; got != "gold" {
		t.Fatalf("metadata follows the caller's map: tier %q", got)
	}

	// Same attributes again (a fresh but equal map, later): the first
	// account, created false, nothing new to persist.
	before := changeLens(b)
	again, created, err := b.CreateAccount(AccountSpec{ID: "alice", Currency: "USD", OverdraftLimit: 5,
		Metadata: map[string]string{"tier": "gold"}}, t0.Add(time.Hour))
	if err != nil || created {
		t.Fatalf("replay: created %v, %v", created, err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("replay returned %+v, want %+v", again, want)
	}
	if changeLens(b) != before {
		t.Fatalf("replay changed the Changes: %v → %v", before, changeLens(b))
	}

	for name, s := range map[string]AccountSpec{
		"currency":       {ID: "alice", Currency: "EUR", OverdraftLimit: 5, Metadata: map[string]string{"tier": "gold"}},
		"overdraft":      {ID: "alice", Currency: "USD", OverdraftLimit: 6, Metadata: map[string]string{"tier": "gold"}},
		"metadata value": {ID: "alice", Currency: "USD", OverdraftLimit: 5, Metadata: map[string]string{"tier": "silver"}},
		"metadata extra": {ID: "alice", Currency: "USD", OverdraftLimit: 5, Metadata: map[string]string{"tier": "gold", "x": ""}},
		"no metadata":    {ID: "alice", Currency: "USD", OverdraftLimit: 5},
	} {
		_, created, err := b.CreateAccount(s, t0)
		if created {
			t.Errorf("%s: created", name)
		}
		wantCode(t, err, CodeAccountExists)
		if got := account(t, b, "alice"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: conflict changed the account to %+v", name, got)
		}
	}

	// nil and empty metadata are the same attributes.
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	if _, created, err := b.CreateAccount(AccountSpec{ID: "bob", Currency: "USD", Metadata: map[string]string{}}, t0); err != nil || created {
		t.Fatalf("bob with empty metadata: created %v, %v", created, err)
	}

	// After the batch is durable, a replay still finds the account.
	b.Reset()
	if _, created, err := b.CreateAccount(AccountSpec{ID: "bob", Currency: "USD"}, t0); err != nil || created {
		t.Fatalf("bob after reset: created %v, %v", created, err)
	}
	if n := len(b.Changes().Accounts) + len(b.Changes().Opened); n != 0 {
		t.Fatalf("replay after reset left %d changes", n)
	}
	if w := account(t, b, WorldID); !w.System() {
		t.Fatalf("@world is not a system account")
	}
}

func TestTransferMovesMoneyAndRecordsHistory(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	b.Reset()

	f := mustTransfer(t, b, TransferRequest{ID: "f1", From: WorldID, To: "alice", Amount: 100, Memo: "funding"}, t0)
	if f.State != StatePosted || f.PostedAmount != 100 || f.Currency != "USD" || f.CurrencyGiven || f.TwoPhase {
		t.Fatalf("funding transfer %+v", f)
	}
	now := t0.Add(time.Minute)
	tr := mustTransfer(t, b, TransferRequest{ID: "t1", From: "alice", To: "bob", Amount: 30, Memo: "lunch"}, now)
	want := Transfer{ID: "t1", From: "alice", To: "bob", Amount: 30, Currency: "USD", Memo: "lunch",
		State: StatePosted, PostedAmount: 30, CreatedAt: now, UpdatedAt: now}
	if !reflect.DeepEqual(tr, want) {
		t.Fatalf("transfer = %+v\nwant %+v", tr, want)
	}
	if !tr.ExpiresAt().IsZero() {
		t.Errorf("posted transfer expires at %v", tr.ExpiresAt())
	}
	wantBalance(t, b, WorldID, -100, 0)
	wantBalance(t, b, "alice", 70, 0)
	wantBalance(t, b, "bob", 30, 0)

	wantEntries := []AccountEntry{
		{"alice", Entry{Seq: 2, TransferID: "t1", Direction: Debit, Amount: 30, BalanceAfter: 70, Counterpart: "bob", Memo: "lunch", At: now}},
		{"bob", Entry{Seq: 1, TransferID: "t1", Direction: Credit, Amount: 30, BalanceAfter: 30, Counterpart: "alice", Memo: "lunch", At: now}},
	}
	if got := entriesOf(b, "t1"); !reflect.DeepEqual(got, wantEntries) {
		t.Fatalf("entries of t1:\n got %+v\nwant %+v", got, wantEntries)
	}
	wantFund := []AccountEntry{
		{WorldID, Entry{Seq: 1, TransferID: "f1", Direction: Debit, Amount: 100, BalanceAfter: -100, Counterpart: "alice", Memo: "funding", At: t0}},
		{"alice", Entry{Seq: 1, TransferID: "f1", Direction: Credit, Amount: 100, BalanceAfter: 100, Counterpart: WorldID, Memo: "funding", At: t0}},
	}
	if got := entriesOf(b, "f1"); !reflect.DeepEqual(got, wantFund) {
		t.Fatalf("entries of f1:\n got %+v\nwant %+v", got, wantFund)
	}
	if a := account(t, b, "alice"); a.Entries != 2 {
		t.Fatalf("alice has %d entries, want 2", a.Entries)
	}
	if Debit.String() != "debit" || Credit.String() != "credit" {
		t.Errorf("direction names %q %q", Debit, Credit)
	}

	// Each dirty account is listed once however often it changed; the
	// transfers are listed in order; no credit leaves the shard.
	mustTransfer(t, b, TransferRequest{From: "alice", To: "bob", Amount: 1}, now)
	mustTransfer(t, b, TransferRequest{From: "bob", To: "alice", Amount: 1}, now)
	ch := b.Changes()
	var ids []string
	for _, a := range ch.Accounts {
		ids = append(ids, a.ID)
	}
	sort.Strings(ids)
	if !slices.Equal(ids, []string{WorldID, "alice", "bob"}) {
		t.Fatalf("dirty accounts %v", ids)
	}
	if len(ch.Transfers) != 4 || ch.Transfers[0].ID != "f1" || ch.Transfers[1].ID != "t1" {
		t.Fatalf("changed transfers %d", len(ch.Transfers))
	}
	if len(ch.Credits) != 0 || len(ch.Opened) != 0 {
		t.Fatalf("local transfers produced credits %v or opened %v", ch.Credits, ch.Opened)
	}
	// Server-chosen ids come from the Lookup and differ.
	if ch.Transfers[2].ID == ch.Transfers[3].ID || ch.Transfers[2].ID == "" {
		t.Fatalf("server ids %q and %q", ch.Transfers[2].ID, ch.Transfers[3].ID)
	}
	if !maps.Equal(w.claims, map[string]int{"f1": 0, "t1": 0}) {
		t.Fatalf("claims %v, want the two client-chosen ids", w.claims)
	}
}

// An account's Recent entries are its newest entries, oldest first, as
// Changes lists them; Replay rebuilds them from a journal, skipping what
// storage already has and refusing gaps.
func TestRecentEntriesAndReplay(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	fund(t, b, "alice", 100)
	for i := range 3 {
		mustTransfer(t, b, TransferRequest{From: "alice", To: WorldID, Amount: int64(i + 1)}, t0)
	}
	var journal []AccountEntry
	for _, e := range journalItems(b.Changes()) {
		if e.Account == "alice" {
			journal = append(journal, e)
		}
	}
	alice, _ := b.Account("alice")
	if len(journal) != 4 || alice.Entries != 4 || alice.Recent.Len() != 4 {
		t.Fatalf("alice: %d entries, %d recent, %d in changes", alice.Entries, alice.Recent.Len(), len(journal))
	}
	for i, e := range logEntries(alice.Recent, 1) {
		if !reflect.DeepEqual(e, journal[i].Entry) {
			t.Fatalf("recent %d = %+v, want %+v", i, e, journal[i].Entry)
		}
	}

	// Storage holds entry 1 in a chunk; the journal holds 1 to 4.
	fresh := NewBook(newWorld().view(0))
	fresh.Load(Account{ID: "alice", Currency: "USD", Entries: 1, Balance: journal[0].BalanceAfter})
	for i := range journal {
		if err := fresh.Replay(&journal[i]); err != nil {
			t.Fatalf("replay of entry %d: %v", journal[i].Seq, err)
		}
	}
	got, _ := fresh.Account("alice")
	if got.Entries != 4 || got.Balance != alice.Balance || !reflect.DeepEqual(logEntries(got.Recent, 2), logEntries(alice.Recent, 1)[1:]) {
		t.Fatalf("after replay: entries %d balance %d recent %+v", got.Entries, got.Balance, logEntries(got.Recent, 2))
	}
	gap := journal[3]
	gap.Seq = 6
	if err := fresh.Replay(&gap); err == nil {
		t.Fatal("replay over a gap in the entries succeeded")
	}
	gap.Account = "nobody"
	if err := fresh.Replay(&gap); err == nil {
		t.Fatal("replay for an unknown account succeeded")
	}
	if again, _ := fresh.Account("alice"); !reflect.DeepEqual(again, got) {
		t.Fatalf("failed replays changed alice: %+v", again)
	}
}

func TestOverdraftLimit(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "od", Currency: "USD", OverdraftLimit: 50})
	mustCreate(t, b, AccountSpec{ID: "plain", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "sink", Currency: "USD"})

	// Exactly down to the floor is allowed ...
	mustTransfer(t, b, TransferRequest{From: "od", To: "sink", Amount: 50}, t0)
	wantBalance(t, b, "od", -50, 0)
	// ... one unit past it is not, and changes nothing.
	before := snap(b)
	_, _, err := b.Transfer(TransferRequest{From: "od", To: "sink", Amount: 1}, t0)
	wantCode(t, err, CodeInsufficientFunds)
	sameSnapshot(t, "one past the overdraft", snap(b), before)

	// No limit: the balance is the floor.
	fund(t, b, "plain", 10)
	_, _, err = b.Transfer(TransferRequest{From: "plain", To: "sink", Amount: 11}, t0)
	wantCode(t, err, CodeInsufficientFunds)
	mustTransfer(t, b, TransferRequest{From: "plain", To: "sink", Amount: 10}, t0)
	wantBalance(t, b, "plain", 0, 0)
	_, _, err = b.Transfer(TransferRequest{From: "plain", To: "sink", Amount: 1}, t0)
	wantCode(t, err, CodeInsufficientFunds)

	// Holds count against the overdraft too.
	mustCreate(t, b, AccountSpec{ID: "od2", Currency: "USD", OverdraftLimit: 50})
	mustTransfer(t, b, TransferRequest{ID: "h", From: "od2", To: "sink", Amount: 30, Pending: true}, t0)
	_, _, err = b.Transfer(TransferRequest{From: "od2", To: "sink", Amount: 21}, t0)
	wantCode(t, err, CodeInsufficientFunds)
	mustTransfer(t, b, TransferRequest{From: "od2", To: "sink", Amount: 20}, t0)
	wantBalance(t, b, "od2", -20, 30)
	if a := account(t, b, "od2"); a.Available() != -50 {
		t.Fatalf("od2 available %d, want -50", a.Available())
	}
}

func TestSystemAccountsGoNegative(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "@fees", Currency: "USD"})
	mustTransfer(t, b, TransferRequest{From: WorldID, To: "alice", Amount: MaxAmount}, t0)
	mustTransfer(t, b, TransferRequest{From: WorldID, To: "alice", Amount: MaxAmount}, t0)
	wantBalance(t, b, WorldID, -2*MaxAmount, 0)
	mustTransfer(t, b, TransferRequest{From: "@fees", To: "alice", Amount: 5}, t0)
	wantBalance(t, b, "@fees", -5, 0)
	wantBalance(t, b, "alice", 2*MaxAmount+5, 0)

	// Even a system account stops at -MaxSupply.
	b.Load(Account{ID: "@deep", Currency: "USD", Balance: -MaxSupply + 5})
	mustTransfer(t, b, TransferRequest{From: "@deep", To: "alice", Amount: 5}, t0)
	wantBalance(t, b, "@deep", -MaxSupply, 0)
	_, _, err := b.Transfer(TransferRequest{From: "@deep", To: "alice", Amount: 1}, t0)
	wantCode(t, err, CodeInsufficientFunds)
}

func TestInsufficientFundsCountsPendingHolds(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	mustTransfer(t, b, TransferRequest{ID: "hold", From: "alice", To: "bob", Amount: 60, Pending: true}, t0)
	wantBalance(t, b, "alice", 100, 60)

	before := snap(b)
	for _, req := range []TransferRequest{
		{ID: "x1", From: "alice", To: "bob", Amount: 41},
		{ID: "x2", From: "alice", To: "bob", Amount: 41, Pending: true},
		{From: "alice", To: "bob", Amount: 1000},
	} {
		_, _, err := b.Transfer(req, t0)
		wantCode(t, err, CodeInsufficientFunds)
		sameSnapshot(t, "insufficient funds", snap(b), before)
	}
	mustTransfer(t, b, TransferRequest{ID: "x1", From: "alice", To: "bob", Amount: 40}, t0)
	wantBalance(t, b, "alice", 60, 60)
	_, _, err := b.Transfer(TransferRequest{From: "alice", To: "bob", Amount: 1}, t0)
	wantCode(t, err, CodeInsufficientFunds)
}

func TestCurrencyMismatch(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "euro", Currency: "EUR"})
	w.currency["remote-usd"] = "USD"
	w.currency["remote-eur"] = "EUR"
	fund(t, b, "alice", 100)

	before := snap(b)
	for name, req := range map[string]TransferRequest{
		"local accounts":     {ID: "m1", From: "alice", To: "euro", Amount: 1},
		"remote account":     {ID: "m2", From: "alice", To: "remote-eur", Amount: 1},
		"request currency":   {ID: "m3", From: "alice", To: "bob", Amount: 1, Currency: "EUR"},
		"request, remote":    {ID: "m4", From: "alice", To: "remote-usd", Amount: 1, Currency: "EUR"},
		"request, lowercase": {ID: "m5", From: "alice", To: "bob", Amount: 1, Currency: "usd"},
		"pending":            {ID: "m6", From: "alice", To: "euro", Amount: 1, Pending: true},
	} {
		_, _, err := b.Transfer(req, t0)
		if CodeOf(err) != CodeCurrencyMismatch {
			t.Errorf("%s: err %v, want currency_mismatch", name, err)
		}
		sameSnapshot(t, name, snap(b), before)
	}
	tr := mustTransfer(t, b, TransferRequest{ID: "ok", From: "alice", To: "bob", Amount: 1, Currency: "USD"}, t0)
	if tr.Currency != "USD" || !tr.CurrencyGiven {
		t.Fatalf("transfer with currency: %+v", tr)
	}
	mustTransfer(t, b, TransferRequest{From: "alice", To: "remote-usd", Amount: 1}, t0)
}

func TestSameAccountAndNotFound(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	w.currency["remote"] = "USD"
	fund(t, b, "alice", 10)
	before := snap(b)

	_, _, err := b.Transfer(TransferRequest{ID: "s", From: "alice", To: "alice", Amount: 1}, t0)
	wantCode(t, err, CodeSameAccount)
	_, _, err = b.Transfer(TransferRequest{ID: "s", From: "alice", To: "alice", Amount: 1, Pending: true}, t0)
	wantCode(t, err, CodeSameAccount)
	// The sender must be this Book's: a remote account cannot be debited here.
	for _, from := range []string{"ghost", "remote"} {
		_, _, err = b.Transfer(TransferRequest{ID: "n1", From: from, To: "alice", Amount: 1}, t0)
		wantCode(t, err, CodeAccountNotFound)
	}
	_, _, err = b.Transfer(TransferRequest{ID: "n2", From: "alice", To: "ghost", Amount: 1}, t0)
	wantCode(t, err, CodeAccountNotFound)
	_, _, err = b.Transfer(TransferRequest{From: "alice", To: "ghost", Amount: 1, Pending: true}, t0)
	wantCode(t, err, CodeAccountNotFound)
	sameSnapshot(t, "same account / not found", snap(b), before)
}

func TestInvalidAmount(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	before := snap(b)
	for _, amount := range []int64{0, -1, MaxAmount + 1, -MaxAmount} {
		_, _, err := b.Transfer(TransferRequest{ID: "a", From: WorldID, To: "alice", Amount: amount}, t0)
		wantCode(t, err, CodeInvalidArgument)
	}
	sameSnapshot(t, "invalid amounts", snap(b), before)
	mustTransfer(t, b, TransferRequest{ID: "a", From: WorldID, To: "alice", Amount: MaxAmount}, t0)
	wantBalance(t, b, "alice", MaxAmount, 0)
}

func TestIdempotency(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "carol", Currency: "USD"})
	fund(t, b, "alice", 100)

	req := TransferRequest{ID: "t1", From: "alice", To: "bob", Amount: 10, Memo: "m"}
	first := mustTransfer(t, b, req, t0)
	if w.claims["t1"] != 0 {
		t.Fatalf("t1 not claimed")
	}

	conflicts := map[string]TransferRequest{
		"amount":        {ID: "t1", From: "alice", To: "bob", Amount: 11, Memo: "m"},
		"memo":          {ID: "t1", From: "alice", To: "bob", Amount: 10, Memo: "n"},
		"receiver":      {ID: "t1", From: "alice", To: "carol", Amount: 10, Memo: "m"},
		"currency":      {ID: "t1", From: "alice", To: "bob", Amount: 10, Memo: "m", Currency: "USD"},
		"pending":       {ID: "t1", From: "alice", To: "bob", Amount: 10, Memo: "m", Pending: true},
		"timeout":       {ID: "t1", From: "alice", To: "bob", Amount: 10, Memo: "m", Timeout: time.Second},
		"bad amount":    {ID: "t1", From: "alice", To: "bob", Amount: -10, Memo: "m"},
		"same account":  {ID: "t1", From: "alice", To: "alice", Amount: 10, Memo: "m"},
		"other sender?": {ID: "t1", From: WorldID, To: "bob", Amount: 10, Memo: "m"},
	}
	check := func(phase string) {
		t.Helper()
		before := snap(b)
		got, replayed, err := b.Transfer(req, t0.Add(time.Hour))
		if err != nil || !replayed {
			t.Fatalf("%s: replay = replayed %v, %v", phase, replayed, err)
		}
		if !reflect.DeepEqual(got, first) {
			t.Fatalf("%s: replay returned %+v, want %+v", phase, got, first)
		}
		sameSnapshot(t, phase+": replay", snap(b), before)
		for name, c := range conflicts {
			_, replayed, err := b.Transfer(c, t0)
			if replayed || CodeOf(err) != CodeIdempotencyConflict {
				t.Errorf("%s: %s: replayed %v, err %v, want idempotency_conflict", phase, name, replayed, err)
			}
			sameSnapshot(t, phase+": "+name, snap(b), before)
		}
		if _, held := w.claims["t1"]; held != (phase == "same batch") {
			t.Errorf("%s: claim on t1 held %v", phase, held)
		}
	}
	check("same batch")
	wantBalance(t, b, "alice", 90, 0)

	w.commit(b)
	if len(b.recent) != 0 {
		t.Fatalf("Reset left %d recent transfers", len(b.recent))
	}
	check("after commit")
	wantBalance(t, b, "alice", 90, 0)
	wantBalance(t, b, "bob", 10, 0)

	// A request that named its currency replays only with that currency.
	withCur := TransferRequest{ID: "t2", From: "alice", To: "bob", Amount: 5, Currency: "USD"}
	mustTransfer(t, b, withCur, t0)
	if _, replayed, err := b.Transfer(withCur, t0); err != nil || !replayed {
		t.Fatalf("replay with currency: %v %v", replayed, err)
	}
	noCur := withCur
	noCur.Currency = ""
	_, _, err := b.Transfer(noCur, t0)
	wantCode(t, err, CodeIdempotencyConflict)

	// Without an id nothing is deduplicated.
	anon := TransferRequest{From: "alice", To: "bob", Amount: 1}
	a1 := mustTransfer(t, b, anon, t0)
	a2 := mustTransfer(t, b, anon, t0)
	if a1.ID == a2.ID || a1.ID == "" {
		t.Fatalf("server ids %q %q", a1.ID, a2.ID)
	}
	wantBalance(t, b, "alice", 83, 0)

	// A failed request does not reserve its id: it can be used again with
	// another body, and its claim is given back.
	_, _, err = b.Transfer(TransferRequest{ID: "t3", From: "alice", To: "bob", Amount: 1000}, t0)
	wantCode(t, err, CodeInsufficientFunds)
	if _, held := w.claims["t3"]; held {
		t.Fatalf("failed request kept its claim (claims %v)", w.claims)
	}
	mustTransfer(t, b, TransferRequest{ID: "t3", From: "alice", To: "bob", Amount: 1}, t0)

	// A pending transfer replays from the open holds, also in later batches.
	hold := TransferRequest{ID: "h1", From: "alice", To: "bob", Amount: 3, Pending: true, Timeout: time.Minute}
	mustTransfer(t, b, hold, t0)
	w.commit(b)
	delete(w.transfers, "h1") // only the Book's open holds know it now
	if got, replayed, err := b.Transfer(hold, t0); err != nil || !replayed || got.State != StatePending {
		t.Fatalf("replay of a hold: %+v %v %v", got, replayed, err)
	}
}

func TestIdempotencyClaimRefused(t *testing.T) {
	b, v, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	v.refuse["busy"] = true

	before := snap(b)
	for _, req := range []TransferRequest{
		{ID: "busy", From: "alice", To: "bob", Amount: 5},
		{ID: "busy", From: "alice", To: "bob", Amount: 5, Pending: true},
	} {
		_, replayed, err := b.Transfer(req, t0)
		if replayed {
			t.Fatalf("refused claim replayed")
		}
		wantCode(t, err, CodeIdempotencyConflict)
		sameSnapshot(t, "refused claim", snap(b), before)
		if _, ok := b.recent["busy"]; ok {
			t.Fatalf("refused transfer is visible")
		}
		if _, ok := w.claims["busy"]; ok {
			t.Fatalf("refused claim recorded")
		}
	}
	delete(v.refuse, "busy")
	mustTransfer(t, b, TransferRequest{ID: "busy", From: "alice", To: "bob", Amount: 5}, t0)
}

func TestIdempotencyLookupError(t *testing.T) {
	b, v, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	mustTransfer(t, b, TransferRequest{ID: "h", From: "alice", To: "bob", Amount: 5, Pending: true}, t0)
	w.commit(b)

	disk := errors.New("disk on fire")
	v.transferErr = disk
	before := snap(b)
	_, _, err := b.Transfer(TransferRequest{ID: "x", From: "alice", To: "bob", Amount: 5}, t0)
	if !errors.Is(err, disk) {
		t.Fatalf("err = %v, want the lookup's error", err)
	}
	if _, held := w.claims["x"]; held {
		t.Fatalf("failed lookup kept the claim")
	}
	_, err = b.Post("unknown", 0, t0)
	if !errors.Is(err, disk) {
		t.Fatalf("post: err = %v, want the lookup's error", err)
	}
	sameSnapshot(t, "lookup error", snap(b), before)
	// Open holds and server-chosen ids do not need storage.
	mustTransfer(t, b, TransferRequest{From: "alice", To: "bob", Amount: 5}, t0)
	if _, err := b.Void("h", t0); err != nil {
		t.Fatalf("void of an open hold: %v", err)
	}
}

// A transfer id's claim must be taken before storage is asked: otherwise
// another shard can commit the id (and drop its claim) between the two, and
// the id is created twice.
func TestIdempotencyClaimBeforeLookup(t *testing.T) {
	b, v, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	// Another shard commits "race" (another sender) while this one works.
	v.beforeClaim = func(id string) {
		if id == "race" {
			w.transfers["race"] = Transfer{ID: "race", From: "zed", To: "bob", Amount: 5, State: StatePosted, PostedAmount: 5}
		}
	}
	before := snap(b)
	_, _, err := b.Transfer(TransferRequest{ID: "race", From: "alice", To: "bob", Amount: 5}, t0)
	wantCode(t, err, CodeIdempotencyConflict)
	sameSnapshot(t, "id committed elsewhere", snap(b), before)
	if _, held := w.claims["race"]; held {
		t.Fatalf("claim on a committed id kept")
	}
}

func TestCrossShardCredit(t *testing.T) {
	w := newWorld()
	a, bk := NewBook(w.view(0)), NewBook(w.view(1))
	mustCreate(t, a, AccountSpec{ID: WorldID, Currency: "USD"})
	mustCreate(t, a, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, bk, AccountSpec{ID: "bob", Currency: "USD"})
	w.commit(a)
	w.commit(bk)
	fund(t, a, "alice", 100)

	now := t0.Add(time.Second)
	tr := mustTransfer(t, a, TransferRequest{ID: "x1", From: "alice", To: "bob", Amount: 40, Memo: "rent"}, now)
	if tr.State != StatePosted || tr.PostedAmount != 40 {
		t.Fatalf("cross-shard transfer %+v", tr)
	}
	if _, ok := a.Account("bob"); ok {
		t.Fatalf("the debit shard gained the receiver")
	}
	wantBalance(t, a, "alice", 60, 0)
	want := []CreditLeg{{TransferID: "x1", From: "alice", To: "bob", Amount: 40, Memo: "rent", At: now}}
	if got := a.Changes().Credits; !reflect.DeepEqual(got, want) {
		t.Fatalf("credits %+v, want %+v", got, want)
	}
	if got := entriesOf(a, "x1"); len(got) != 1 || got[0].Account != "alice" || got[0].Direction != Debit || got[0].Counterpart != "bob" || got[0].BalanceAfter != 60 {
		t.Fatalf("debit side entries %+v", got)
	}
	credits := w.commit(a)
	if len(credits) != 1 {
		t.Fatalf("%d credits", len(credits))
	}

	bk.ApplyCredit(credits[0])
	wantBalance(t, bk, "bob", 40, 0)
	wantE := []AccountEntry{{"bob", Entry{Seq: 1, TransferID: "x1", Direction: Credit, Amount: 40, BalanceAfter: 40, Counterpart: "alice", Memo: "rent", At: now}}}
	if got := journalItems(bk.Changes()); !reflect.DeepEqual(got, wantE) {
		t.Fatalf("credit entries %+v, want %+v", got, wantE)
	}
	ch := bk.Changes()
	if len(ch.Credits) != 0 || len(ch.Transfers) != 0 {
		t.Fatalf("credit side changes: credits %v transfers %v", ch.Credits, ch.Transfers)
	}
	if len(ch.Accounts) != 1 || ch.Accounts[0].ID != "bob" || len(ch.Opened) != 0 {
		t.Fatalf("credit side dirty accounts %v opened %v", ch.Accounts, ch.Opened)
	}
	w.commit(bk)
	if a := account(t, bk, "bob"); a.Entries != 1 || a.Balance != 40 {
		t.Fatalf("bob after one credit: %+v", a)
	}

	// The Book refuses a credit for an account it does not own: the engine
	// must route every credit to the receiver's shard.
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("credit for an unknown account did not panic")
			}
		}()
		a.ApplyCredit(CreditLeg{TransferID: "x1", From: "alice", To: "bob", Amount: 40, At: now})
	}()
}

func TestTwoPhase(t *testing.T) {
	setup := func(t *testing.T) (*Book, *world) {
		b, _, w := newTestBook(t)
		mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
		mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
		fund(t, b, "alice", 100)
		w.commit(b)
		return b, w
	}
	hold := TransferRequest{ID: "h", From: "alice", To: "bob", Amount: 70, Pending: true, Memo: "hold"}
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)

	t.Run("hold", func(t *testing.T) {
		b, _ := setup(t)
		tr := mustTransfer(t, b, hold, t1)
		if tr.State != StatePending || !tr.TwoPhase || tr.PostedAmount != 0 || tr.Amount != 70 || !tr.ExpiresAt().IsZero() {
			t.Fatalf("hold %+v", tr)
		}
		wantBalance(t, b, "alice", 100, 70)
		wantBalance(t, b, "bob", 0, 0)
		if a := account(t, b, "alice"); a.Available() != 30 || a.Entries != 1 {
			t.Fatalf("alice %+v", a)
		}
		ch := b.Changes()
		if ch.JournalEntries != 0 || !slices.Equal(ch.HoldsOpened, []string{"h"}) || len(ch.HoldsClosed) != 0 {
			t.Fatalf("hold changes: entries %v opened %v closed %v", journalItems(ch), ch.HoldsOpened, ch.HoldsClosed)
		}
	})

	t.Run("post all", func(t *testing.T) {
		b, w := setup(t)
		mustTransfer(t, b, hold, t1)
		w.commit(b)
		tr, err := b.Post("h", 0, t2)
		if err != nil {
			t.Fatal(err)
		}
		if tr.State != StatePosted || tr.PostedAmount != 70 || tr.Amount != 70 || !tr.UpdatedAt.Equal(t2) || !tr.CreatedAt.Equal(t1) {
			t.Fatalf("posted %+v", tr)
		}
		wantBalance(t, b, "alice", 30, 0)
		wantBalance(t, b, "bob", 70, 0)
		ch := b.Changes()
		if !slices.Equal(ch.HoldsClosed, []string{"h"}) || len(ch.Transfers) != 1 || ch.Transfers[0].State != StatePosted {
			t.Fatalf("post changes: closed %v transfers %v", ch.HoldsClosed, ch.Transfers)
		}
		wantE := []AccountEntry{
			{"alice", Entry{Seq: 2, TransferID: "h", Direction: Debit, Amount: 70, BalanceAfter: 30, Counterpart: "bob", Memo: "hold", At: t2}},
			{"bob", Entry{Seq: 1, TransferID: "h", Direction: Credit, Amount: 70, BalanceAfter: 70, Counterpart: "alice", Memo: "hold", At: t2}},
		}
		if got := entriesOf(b, "h"); !reflect.DeepEqual(got, wantE) {
			t.Fatalf("entries %+v\nwant %+v", got, wantE)
		}
		// Posting twice, or voiding what was posted, is refused — in the
		// same batch and once storage answers.
		for _, phase := range []string{"same batch", "after commit"} {
			before := snap(b)
			_, err = b.Post("h", 0, t2)
			wantCode(t, err, CodeTransferNotPending)
			_, err = b.Void("h", t2)
			wantCode(t, err, CodeTransferNotPending)
			sameSnapshot(t, phase, snap(b), before)
			w.commit(b)
		}
		// A replay of the original request answers with the posted transfer.
		got, replayed, err := b.Transfer(hold, t2)
		if err != nil || !replayed || got.State != StatePosted {
			t.Fatalf("replay after post: %+v %v %v", got, replayed, err)
		}
	})

	t.Run("post part", func(t *testing.T) {
		b, _ := setup(t)
		mustTransfer(t, b, hold, t1)
		tr, err := b.Post("h", 20, t2)
		if err != nil {
			t.Fatal(err)
		}
		if tr.State != StatePosted || tr.PostedAmount != 20 || tr.Amount != 70 {
			t.Fatalf("partly posted %+v", tr)
		}
		// The rest of the hold is released.
		wantBalance(t, b, "alice", 80, 0)
		wantBalance(t, b, "bob", 20, 0)
		if e := entriesOf(b, "h"); len(e) != 2 || e[0].Amount != 20 || e[1].Amount != 20 {
			t.Fatalf("entries %+v", e)
		}
	})

	t.Run("exceeds pending", func(t *testing.T) {
		b, _ := setup(t)
		mustTransfer(t, b, hold, t1)
		before := snap(b)
		_, err := b.Post("h", 71, t2)
		wantCode(t, err, CodeExceedsPending)
		sameSnapshot(t, "exceeds pending", snap(b), before)
		if _, err := b.Post("h", -1, t2); err == nil {
			t.Fatalf("posted a negative amount")
		}
		sameSnapshot(t, "negative post", snap(b), before)
		if _, err := b.Post("h", 70, t2); err != nil {
			t.Fatalf("posting exactly the hold: %v", err)
		}
		wantBalance(t, b, "alice", 30, 0)
	})

	t.Run("void", func(t *testing.T) {
		b, w := setup(t)
		mustTransfer(t, b, hold, t1)
		w.commit(b)
		tr, err := b.Void("h", t2)
		if err != nil {
			t.Fatal(err)
		}
		if tr.State != StateVoided || tr.PostedAmount != 0 || !tr.UpdatedAt.Equal(t2) {
			t.Fatalf("voided %+v", tr)
		}
		wantBalance(t, b, "alice", 100, 0)
		wantBalance(t, b, "bob", 0, 0)
		if len(journalItems(b.Changes())) != 0 || !slices.Equal(b.Changes().HoldsClosed, []string{"h"}) {
			t.Fatalf("void changes: entries %v closed %v", journalItems(b.Changes()), b.Changes().HoldsClosed)
		}
		for _, phase := range []string{"same batch", "after commit"} {
			before := snap(b)
			_, err = b.Post("h", 0, t2)
			wantCode(t, err, CodeTransferNotPending)
			_, err = b.Void("h", t2)
			wantCode(t, err, CodeTransferNotPending)
			sameSnapshot(t, phase, snap(b), before)
			w.commit(b)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		b, w := setup(t)
		before := snap(b)
		_, err := b.Post("nope", 0, t2)
		wantCode(t, err, CodeTransferNotFound)
		_, err = b.Void("nope", t2)
		wantCode(t, err, CodeTransferNotFound)
		sameSnapshot(t, "post/void of an unknown id", snap(b), before)
		// A single-phase transfer is not pending.
		mustTransfer(t, b, TransferRequest{ID: "single", From: "alice", To: "bob", Amount: 1}, t1)
		w.commit(b)
		before = snap(b)
		_, err = b.Post("single", 0, t2)
		wantCode(t, err, CodeTransferNotPending)
		sameSnapshot(t, "post of a posted transfer", snap(b), before)
	})

	t.Run("cross-shard post", func(t *testing.T) {
		b, w := setup(t)
		w.currency["remote"] = "USD"
		mustTransfer(t, b, TransferRequest{ID: "rh", From: "alice", To: "remote", Amount: 50, Pending: true}, t1)
		if len(b.Changes().Credits) != 0 {
			t.Fatalf("a hold sent a credit")
		}
		if _, err := b.Post("rh", 30, t2); err != nil {
			t.Fatal(err)
		}
		want := []CreditLeg{{TransferID: "rh", From: "alice", To: "remote", Amount: 30, At: t2}}
		if got := b.Changes().Credits; !reflect.DeepEqual(got, want) {
			t.Fatalf("credits %+v, want %+v", got, want)
		}
		wantBalance(t, b, "alice", 70, 0)
	})
}

func TestExpire(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 1000)
	if !b.NextExpiry().IsZero() {
		t.Fatalf("next expiry with no holds: %v", b.NextExpiry())
	}
	for _, h := range []struct {
		id      string
		timeout time.Duration
	}{{"h30", 30 * time.Second}, {"h10", 10 * time.Second}, {"never", 0}, {"h20", 20 * time.Second}, {"h20b", 20 * time.Second}} {
		mustTransfer(t, b, TransferRequest{ID: h.id, From: "alice", To: "bob", Amount: 10, Pending: true, Timeout: h.timeout}, t0)
	}
	w.commit(b)
	wantBalance(t, b, "alice", 1000, 50)
	if got := b.NextExpiry(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next expiry %v", got)
	}
	if got := b.Expire(t0.Add(10*time.Second - 1)); len(got) != 0 {
		t.Fatalf("expired early: %+v", got)
	}
	if n := len(b.Changes().Transfers); n != 0 {
		t.Fatalf("an early Expire changed %d transfers", n)
	}

	now := t0.Add(25 * time.Second)
	got := b.Expire(now)
	var ids []string
	for _, tr := range got {
		ids = append(ids, tr.ID)
		if tr.State != StateExpired || !tr.UpdatedAt.Equal(now) || tr.PostedAmount != 0 || tr.ExpiresAt().After(now) {
			t.Errorf("expired transfer %+v", tr)
		}
	}
	if len(ids) != 3 || ids[0] != "h10" || !slices.Contains(ids[1:], "h20") || !slices.Contains(ids[1:], "h20b") {
		t.Fatalf("expired %v, want h10 then the two h20s", ids)
	}
	wantBalance(t, b, "alice", 1000, 20)
	if !slices.Equal(b.Changes().HoldsClosed, ids) {
		t.Fatalf("holds closed %v, want %v", b.Changes().HoldsClosed, ids)
	}
	if len(journalItems(b.Changes())) != 0 {
		t.Fatalf("expiry wrote history")
	}
	if got := b.NextExpiry(); !got.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("next expiry %v, want the h30 deadline", got)
	}
	_, err := b.Post("h10", 0, now)
	wantCode(t, err, CodeTransferNotPending)
	w.commit(b)
	_, err = b.Void("h20", now)
	wantCode(t, err, CodeTransferNotPending)

	// A deadline exactly at now is due.
	got = b.Expire(t0.Add(30 * time.Second))
	if len(got) != 1 || got[0].ID != "h30" {
		t.Fatalf("at the deadline: %+v", got)
	}
	if !b.NextExpiry().IsZero() {
		t.Fatalf("next expiry %v with only a timeless hold left", b.NextExpiry())
	}
	if got := b.Expire(t0.Add(1000 * time.Hour)); len(got) != 0 {
		t.Fatalf("a hold without timeout expired: %+v", got)
	}
	wantBalance(t, b, "alice", 1000, 10)
}

func TestExpireSkipsPostedAndVoided(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 1000)
	for i, d := range []time.Duration{10, 20, 30} {
		mustTransfer(t, b, TransferRequest{ID: "h" + strconv.Itoa(i), From: "alice", To: "bob", Amount: 10, Pending: true, Timeout: d * time.Second}, t0)
	}
	if _, err := b.Void("h0", t0); err != nil {
		t.Fatal(err)
	}
	// h0's deadline passes after its void: Expire must not release it
	// again. (No snapshot before: NextExpiry would drop the stale entry.)
	lens := changeLens(b)
	if got := b.Expire(t0.Add(15 * time.Second)); len(got) != 0 {
		t.Fatalf("expired a voided hold: %+v", got)
	}
	wantBalance(t, b, "alice", 1000, 20)
	if changeLens(b) != lens {
		t.Fatalf("Expire changed %v → %v", lens, changeLens(b))
	}
	if b.recent["h0"].State != StateVoided {
		t.Fatalf("h0 is %s", b.recent["h0"].State)
	}
	// The stale heap entry of h0 is skipped.
	if got := b.NextExpiry(); !got.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("next expiry after void: %v", got)
	}
	if _, err := b.Post("h1", 0, t0); err != nil {
		t.Fatal(err)
	}
	if got := b.NextExpiry(); !got.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("next expiry after post: %v", got)
	}
	if _, err := b.Post("h2", 5, t0); err != nil {
		t.Fatal(err)
	}
	if !b.NextExpiry().IsZero() {
		t.Fatalf("next expiry with no open holds: %v", b.NextExpiry())
	}
	before := snap(b)
	if got := b.Expire(t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("expired closed holds: %+v", got)
	}
	sameSnapshot(t, "expire of closed holds", snap(b), before)
	for id, want := range map[string]TransferState{"h0": StateVoided, "h1": StatePosted, "h2": StatePosted} {
		if got := b.recent[id].State; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	wantBalance(t, b, "alice", 1000-10-5, 0)
}

func TestLoadPending(t *testing.T) {
	w := newWorld()
	b := NewBook(w.view(0))
	w.currency["bob"] = "USD"
	b.Load(Account{ID: "alice", Currency: "USD", Balance: 100, Pending: 45, Entries: 2, CreatedAt: t0})
	p1 := Transfer{ID: "p1", From: "alice", To: "bob", Amount: 30, Currency: "USD", State: StatePending, TwoPhase: true, Timeout: time.Minute, CreatedAt: t0, UpdatedAt: t0}
	p2 := Transfer{ID: "p2", From: "alice", To: "bob", Amount: 15, Currency: "USD", State: StatePending, TwoPhase: true, CreatedAt: t0, UpdatedAt: t0}
	b.LoadPending(p1)
	b.LoadPending(p2)
	if n := changeLens(b); n != [8]int{} {
		t.Fatalf("loading left changes %v", n)
	}
	if got := b.NextExpiry(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next expiry %v", got)
	}
	// A replay of a loaded hold is answered from memory.
	if got, replayed, err := b.Transfer(TransferRequest{ID: "p2", From: "alice", To: "bob", Amount: 15, Pending: true}, t0); err != nil || !replayed || got.State != StatePending {
		t.Fatalf("replay of a loaded hold: %+v %v %v", got, replayed, err)
	}
	_, _, err := b.Transfer(TransferRequest{From: "alice", To: "bob", Amount: 56}, t0)
	wantCode(t, err, CodeInsufficientFunds)

	if _, err := b.Post("p2", 10, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	wantBalance(t, b, "alice", 90, 30)
	if a := account(t, b, "alice"); a.Entries != 3 {
		t.Fatalf("entries %d, want 3 (seq continues after loaded ones)", a.Entries)
	}
	if e := journalItems(b.Changes()); len(e) != 1 || e[0].Seq != 3 || e[0].BalanceAfter != 90 {
		t.Fatalf("entries %+v", e)
	}
	if c := b.Changes().Credits; len(c) != 1 || c[0].Amount != 10 || c[0].To != "bob" {
		t.Fatalf("credits %+v", c)
	}
	got := b.Expire(t0.Add(time.Minute))
	if len(got) != 1 || got[0].ID != "p1" || got[0].State != StateExpired {
		t.Fatalf("expired %+v", got)
	}
	wantBalance(t, b, "alice", 90, 0)
}

func TestAtomicGroupRollback(t *testing.T) {
	w := newWorld()
	b, other := NewBook(w.view(0)), NewBook(w.view(1))
	mustCreate(t, b, AccountSpec{ID: WorldID, Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	mustCreate(t, other, AccountSpec{ID: "remote", Currency: "USD"})
	w.commit(other)
	fund(t, b, "alice", 1000)
	mustTransfer(t, b, TransferRequest{ID: "old-hold", From: "alice", To: "bob", Amount: 20, Pending: true, Timeout: time.Minute}, t0)
	mustTransfer(t, b, TransferRequest{ID: "old-hold2", From: "alice", To: "remote", Amount: 25, Pending: true}, t0)
	w.commit(b)
	// Work of the current batch before the group: it must survive.
	mustTransfer(t, b, TransferRequest{ID: "pre", From: "alice", To: "bob", Amount: 5}, t0)
	mustCreate(t, b, AccountSpec{ID: "dave", Currency: "USD"})

	before := snap(b)
	recentBefore := slices.Sorted(maps.Keys(b.recent))
	claimsBefore := maps.Clone(w.claims)
	sp := b.Begin()

	now := t0.Add(time.Second)
	mustCreate(t, b, AccountSpec{ID: "carol", Currency: "USD"})
	mustTransfer(t, b, TransferRequest{ID: "g1", From: WorldID, To: "carol", Amount: 50}, now)
	mustTransfer(t, b, TransferRequest{ID: "g2", From: "carol", To: "alice", Amount: 50}, now)
	mustTransfer(t, b, TransferRequest{ID: "g3", From: "alice", To: "remote", Amount: 7}, now)
	mustTransfer(t, b, TransferRequest{ID: "g4", From: "alice", To: "bob", Amount: 15, Pending: true, Timeout: 10 * time.Second}, now)
	mustTransfer(t, b, TransferRequest{From: "alice", To: "bob", Amount: 1}, now)
	if _, _, err := b.Transfer(TransferRequest{ID: "g5", From: "alice", To: "bob", Amount: 1 << 40}, now); CodeOf(err) != CodeInsufficientFunds {
		t.Fatalf("g5: %v", err)
	}
	if _, err := b.Post("old-hold", 5, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Post("old-hold2", 0, now); err != nil {
		t.Fatal(err)
	}
	b.ApplyCredit(CreditLeg{TransferID: "in1", From: "remote", To: "bob", Amount: 3, At: now})
	if !b.NextExpiry().Equal(now.Add(10 * time.Second)) {
		t.Fatalf("the group's hold is not the next to expire")
	}
	if len(b.Changes().Credits) != 2 || len(w.claims) != 5 {
		t.Fatalf("inside the group: credits %v claims %v", b.Changes().Credits, w.claims)
	}

	b.Rollback(sp)

	sameSnapshot(t, "after rollback", snap(b), before)
	if _, ok := b.Account("carol"); ok {
		t.Fatalf("carol survived the rollback")
	}
	if _, ok := b.Account("dave"); !ok {
		t.Fatalf("dave, opened before the group, was rolled back")
	}
	if list := b.Accounts(); len(list) != 4 || list[3].ID != "dave" {
		t.Fatalf("accounts after rollback: %d, the newest %s", len(list), list[len(list)-1].ID)
	}
	if got := slices.Sorted(maps.Keys(b.recent)); !slices.Equal(got, recentBefore) {
		t.Fatalf("recent transfers %v, want %v", got, recentBefore)
	}
	if !maps.Equal(w.claims, claimsBefore) {
		t.Fatalf("claims %v, want %v", w.claims, claimsBefore)
	}
	for _, id := range []string{"carol"} {
		for a := range b.dirty {
			if a.ID == id {
				t.Fatalf("%s still dirty", id)
			}
		}
	}
	if len(b.dirty) != len(b.Changes().Accounts) {
		t.Fatalf("dirty set has %d accounts, changes %d", len(b.dirty), len(b.Changes().Accounts))
	}
	if b.undo != nil {
		t.Fatalf("undo log left open")
	}

	// The group's ids are free again (another body is not a conflict) and
	// the holds it touched are as they were: open, and expiring on time.
	mustTransfer(t, b, TransferRequest{ID: "g3", From: "alice", To: "bob", Amount: 2}, now)
	if got := b.Expire(now.Add(30 * time.Second)); len(got) != 0 {
		t.Fatalf("a rolled-back hold expired: %+v", got)
	}
	got := b.Expire(t0.Add(time.Minute))
	if len(got) != 1 || got[0].ID != "old-hold" || got[0].Amount != 20 {
		t.Fatalf("expired %+v, want old-hold", got)
	}
	if tr, err := b.Void("old-hold2", now); err != nil || tr.State != StateVoided {
		t.Fatalf("void old-hold2: %+v %v", tr, err)
	}
	wantBalance(t, b, "alice", 1000-5-2, 0)
	wantBalance(t, b, "bob", 5+2, 0)
}

// A hold opened earlier in the same batch and posted inside a rolled-back
// group is still there, pending, and findable by its id.
func TestAtomicGroupRollbackOfSameBatchHold(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	hold := TransferRequest{ID: "h", From: "alice", To: "bob", Amount: 30, Pending: true}
	mustTransfer(t, b, hold, t0)
	before := snap(b)
	sp := b.Begin()
	if _, err := b.Void("h", t0); err != nil {
		t.Fatal(err)
	}
	b.Rollback(sp)
	after := snap(b)
	// Only what the Book does is compared, not how many transfers it keeps
	// in its recent map (the rolled-back void removes h from it; the open
	// hold still answers for h).
	after.lens[7], before.lens[7] = 0, 0
	sameSnapshot(t, "rollback of a void", after, before)
	got, replayed, err := b.Transfer(hold, t0)
	if err != nil || !replayed || got.State != StatePending {
		t.Fatalf("replay after rollback: %+v %v %v", got, replayed, err)
	}
	if ch := b.Changes(); len(ch.Transfers) != 2 || ch.Transfers[1].ID != "h" || ch.Transfers[1].State != StatePending {
		t.Fatalf("transfers to write: %d, last %+v", len(ch.Transfers), ch.Transfers[len(ch.Transfers)-1])
	}
	if _, err := b.Post("h", 0, t0); err != nil {
		t.Fatal(err)
	}
	wantBalance(t, b, "alice", 70, 0)
}

func TestAtomicGroupCommit(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	w.currency["remote"] = "USD"
	w.commit(b)
	b.Begin()
	mustTransfer(t, b, TransferRequest{ID: "c1", From: WorldID, To: "alice", Amount: 100}, t0)
	mustTransfer(t, b, TransferRequest{ID: "c2", From: "alice", To: "bob", Amount: 60}, t0)
	mustTransfer(t, b, TransferRequest{ID: "c3", From: "bob", To: "remote", Amount: 10}, t0)
	mustTransfer(t, b, TransferRequest{ID: "c4", From: "alice", To: "bob", Amount: 10, Pending: true}, t0)
	b.Commit()
	if b.undo != nil {
		t.Fatalf("undo log open after commit")
	}
	after := snap(b)
	wantBalance(t, b, "alice", 40, 10)
	wantBalance(t, b, "bob", 50, 0)
	if after.lens != [8]int{3, 0, 4, 5, 1, 1, 0, 4} {
		t.Fatalf("changes after commit %v", after.lens)
	}
	// A later group's rollback reaches back only to its own Begin.
	sp := b.Begin()
	mustTransfer(t, b, TransferRequest{ID: "c5", From: "alice", To: "bob", Amount: 5}, t0)
	b.Rollback(sp)
	sameSnapshot(t, "second group rolled back", snap(b), after)
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		if _, held := w.claims[id]; !held {
			t.Errorf("claim on %s released by a later rollback", id)
		}
	}
	if _, held := w.claims["c5"]; held {
		t.Errorf("claim on c5 kept")
	}
	credits := w.commit(b)
	if len(credits) != 1 || credits[0].TransferID != "c3" {
		t.Fatalf("credits %+v", credits)
	}
	if len(w.claims) != 0 {
		t.Fatalf("claims left after commit: %v", w.claims)
	}
}

// Inside a group, a failed item with a client id gives its claim back
// without disturbing the rest of the undo log.
func TestAtomicGroupFailedItemKeepsUndoLog(t *testing.T) {
	b, _, w := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	mustCreate(t, b, AccountSpec{ID: "bob", Currency: "USD"})
	fund(t, b, "alice", 100)
	w.commit(b)
	before := snap(b)
	sp := b.Begin()
	mustTransfer(t, b, TransferRequest{ID: "a1", From: "alice", To: "bob", Amount: 10}, t0)
	_, _, err := b.Transfer(TransferRequest{ID: "a2", From: "alice", To: "bob", Amount: 1000}, t0)
	wantCode(t, err, CodeInsufficientFunds)
	_, _, err = b.Transfer(TransferRequest{ID: "a3", From: "alice", To: "nobody", Amount: 1}, t0)
	wantCode(t, err, CodeAccountNotFound)
	mustTransfer(t, b, TransferRequest{ID: "a4", From: "alice", To: "bob", Amount: 20}, t0)
	if got := slices.Sorted(maps.Keys(w.claims)); !slices.Equal(got, []string{"a1", "a4"}) {
		t.Fatalf("claims %v", got)
	}
	b.Rollback(sp)
	sameSnapshot(t, "rollback", snap(b), before)
	if len(w.claims) != 0 {
		t.Fatalf("claims after rollback: %v", w.claims)
	}
}

// TestRandomOperations drives a few Books with random commands, commits,
// atomic groups and credit deliveries, and checks after every step that no
// money is made or lost and that every balance is the sum of its history.
func TestRandomOperations(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LEDGER_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (rerun with LEDGER_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	steps := 6000
	if testing.Short() {
		steps = 1500
	}

	const nBooks = 3
	w := newWorld()
	books := make([]*Book, nBooks)
	for i := range books {
		books[i] = NewBook(w.view(i))
	}
	owner := map[string]int{}
	var ids []string
	open := func(id string, k int, limit int64) {
		mustCreate(t, books[k], AccountSpec{ID: id, Currency: "USD", OverdraftLimit: limit})
		owner[id] = k
		ids = append(ids, id)
	}
	open(WorldID, 0, 0)
	open("@ops", 1, 0)
	for i := range 12 {
		open(fmt.Sprintf("u%d", i), i%nBooks, int64(rng.IntN(3))*50)
	}
	open("eur", 2, 0) // another currency, which every transfer to it must refuse
	books[2].accounts["eur"].Currency = "EUR"

	history := map[string][]Entry{}
	var inflight []CreditLeg
	var replayable []TransferRequest
	nextID := 0
	now := t0

	commit := func(k int) {
		b := books[k]
		for _, e := range journalItems(b.Changes()) {
			h := history[e.Account]
			if e.Seq != uint64(len(h))+1 {
				t.Fatalf("%s: entry seq %d after %d entries", e.Account, e.Seq, len(h))
			}
			prev := int64(0)
			if len(h) > 0 {
				prev = h[len(h)-1].BalanceAfter
			}
			delta := e.Amount
			if e.Direction == Debit {
				delta = -delta
			}
			if e.Amount <= 0 || e.BalanceAfter != prev+delta {
				t.Fatalf("%s: entry %+v after balance %d", e.Account, e.Entry, prev)
			}
			history[e.Account] = append(h, e.Entry)
		}
		inflight = append(inflight, w.commit(b)...)
		for id, a := range b.accounts {
			h := history[id]
			sum := int64(0)
			for _, e := range h {
				if e.Direction == Debit {
					sum -= e.Amount
				} else {
					sum += e.Amount
				}
			}
			if a.Balance != sum || a.Entries != uint64(len(h)) {
				t.Fatalf("%s: balance %d entries %d, history sums to %d over %d entries", id, a.Balance, a.Entries, sum, len(h))
			}
		}
	}
	for k := range books {
		commit(k)
	}

	check := func(step int, what string) {
		total := int64(0)
		for _, b := range books {
			held := map[string]int64{}
			for _, p := range b.pending {
				if p.State != StatePending {
					t.Fatalf("step %d (%s): open hold %s is %s", step, what, p.ID, p.State)
				}
				held[p.From] += p.Amount
			}
			for id, a := range b.accounts {
				total += a.Balance
				if a.Pending != held[id] {
					t.Fatalf("step %d (%s): %s pending %d, open holds %d", step, what, id, a.Pending, held[id])
				}
				if !a.System() && a.Available() < -a.OverdraftLimit {
					t.Fatalf("step %d (%s): %s available %d below -%d", step, what, id, a.Available(), a.OverdraftLimit)
				}
			}
			for _, c := range b.Changes().Credits {
				total += c.Amount
			}
		}
		for _, c := range inflight {
			total += c.Amount
		}
		if total != 0 {
			t.Fatalf("step %d (%s): balances plus undelivered credits sum to %d", step, what, total)
		}
	}

	randomRequest := func(k int) TransferRequest {
		var local []string
		for _, id := range ids {
			if owner[id] == k {
				local = append(local, id)
			}
		}
		req := TransferRequest{
			From:   local[rng.IntN(len(local))],
			To:     ids[rng.IntN(len(ids))],
			Amount: 1 + rng.Int64N(300),
		}
		if rng.IntN(3) > 0 {
			nextID++
			req.ID = "c" + strconv.Itoa(nextID)
		}
		if rng.IntN(4) == 0 {
			req.Pending = true
			req.Timeout = time.Duration(rng.IntN(4)) * 5 * time.Second
		}
		if rng.IntN(5) == 0 {
			req.Memo = "memo"
		}
		return req
	}
	wantFailure := func(step int, err error) {
		switch CodeOf(err) {
		case CodeInsufficientFunds, CodeSameAccount, CodeCurrencyMismatch, CodeAccountNotFound, CodeIdempotencyConflict:
		default:
			t.Fatalf("step %d: unexpected error %v", step, err)
		}
	}
	var counts [8]int
	for step := range steps {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		k := rng.IntN(nBooks)
		b := books[k]
		lens := changeLens(b)
		op := rng.IntN(100)
		switch {
		case op < 35: // transfer
			counts[0]++
			req := randomRequest(k)
			tr, replayed, err := b.Transfer(req, now)
			if err != nil {
				wantFailure(step, err)
				if changeLens(b) != lens {
					t.Fatalf("step %d: failed transfer changed %v → %v", step, lens, changeLens(b))
				}
				break
			}
			if replayed || tr.Amount != req.Amount {
				t.Fatalf("step %d: new transfer %+v replayed %v", step, tr, replayed)
			}
			if req.ID != "" {
				replayable = append(replayable, req)
			}
		case op < 42: // replay, identical or changed
			counts[1]++
			if len(replayable) == 0 {
				break
			}
			req := replayable[rng.IntN(len(replayable))]
			rb := books[owner[req.From]]
			lens = changeLens(rb)
			changed := rng.IntN(2) == 0
			if changed {
				req.Amount++
			}
			_, replayed, err := rb.Transfer(req, now)
			if changed && (replayed || CodeOf(err) != CodeIdempotencyConflict) || !changed && (!replayed || err != nil) {
				t.Fatalf("step %d: replay (changed %v) of %s: replayed %v, %v", step, changed, req.ID, replayed, err)
			}
			if changeLens(rb) != lens {
				t.Fatalf("step %d: replay changed %v → %v", step, lens, changeLens(rb))
			}
		case op < 52: // post
			counts[2]++
			holds := slices.Sorted(maps.Keys(b.pending))
			if len(holds) == 0 {
				break
			}
			id := holds[rng.IntN(len(holds))]
			held := b.pending[id].Amount
			amount := rng.Int64N(held + 3)
			tr, err := b.Post(id, amount, now)
			if amount > held {
				wantCode(t, err, CodeExceedsPending)
				break
			}
			if err != nil || tr.State != StatePosted || (amount != 0 && tr.PostedAmount != amount) || (amount == 0 && tr.PostedAmount != held) {
				t.Fatalf("step %d: post %s %d of %d: %+v %v", step, id, amount, held, tr, err)
			}
		case op < 57: // void
			counts[3]++
			holds := slices.Sorted(maps.Keys(b.pending))
			if len(holds) == 0 {
				break
			}
			if tr, err := b.Void(holds[rng.IntN(len(holds))], now); err != nil || tr.State != StateVoided {
				t.Fatalf("step %d: void %+v %v", step, tr, err)
			}
		case op < 63: // expire
			counts[4]++
			last := time.Time{}
			for _, tr := range b.Expire(now) {
				if tr.State != StateExpired || tr.ExpiresAt().After(now) || tr.ExpiresAt().Before(last) {
					t.Fatalf("step %d: expired %+v at %v after %v", step, tr, now, last)
				}
				last = tr.ExpiresAt()
			}
			if next := b.NextExpiry(); !next.IsZero() && !next.After(now) {
				t.Fatalf("step %d: hold due at %v still open at %v", step, next, now)
			}
		case op < 72: // atomic group
			counts[5]++
			before := snap(b)
			claims := maps.Clone(w.claims)
			sp := b.Begin()
			var made []TransferRequest
			failed := false
			for range 1 + rng.IntN(4) {
				req := randomRequest(k)
				if _, _, err := b.Transfer(req, now); err != nil {
					wantFailure(step, err)
					failed = true
					break
				}
				if req.ID != "" {
					made = append(made, req)
				}
			}
			if failed || rng.IntN(3) == 0 {
				b.Rollback(sp)
				sameSnapshot(t, fmt.Sprintf("step %d: rollback", step), snap(b), before)
				if !maps.Equal(claims, w.claims) {
					t.Fatalf("step %d: claims after rollback %v, before %v", step, w.claims, claims)
				}
			} else {
				b.Commit()
				replayable = append(replayable, made...)
			}
		case op < 85: // commit
			counts[6]++
			commit(k)
		default: // deliver a credit
			counts[7]++
			if len(inflight) == 0 {
				break
			}
			i := rng.IntN(len(inflight))
			leg := inflight[i]
			inflight = slices.Delete(inflight, i, i+1)
			books[owner[leg.To]].ApplyCredit(leg)
		}
		check(step, fmt.Sprint("op ", op))
	}

	// Drain: commit everything, deliver every credit, commit again.
	for k := range books {
		commit(k)
	}
	for _, leg := range inflight {
		books[owner[leg.To]].ApplyCredit(leg)
	}
	inflight = nil
	for k := range books {
		commit(k)
	}
	check(steps, "drained")
	if len(inflight) != 0 {
		t.Fatalf("credits produced by deliveries: %v", inflight)
	}
	sum := int64(0)
	for _, b := range books {
		for _, a := range b.accounts {
			sum += a.Balance
		}
	}
	if sum != 0 {
		t.Fatalf("balances sum to %d after draining", sum)
	}
	if len(w.claims) != 0 {
		t.Fatalf("claims left: %v", w.claims)
	}
	t.Logf("ops: transfers %d replays %d posts %d voids %d expiries %d groups %d commits %d deliveries %d; %d transfers stored",
		counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], counts[7], len(w.transfers))
}

// TestIdempotencyAcrossResetsAfterALargeBatch runs small batches after one
// that opened and funded thousands of accounts, across the Reset that
// drops the large batch's maps: a retried transfer id is recognised in the
// batch that wrote it and in the batches after.
func TestIdempotencyAcrossResetsAfterALargeBatch(t *testing.T) {
	b, _, w := newTestBook(t)
	for i := range 5000 {
		id := fmt.Sprintf("acct-%d", i)
		mustCreate(t, b, AccountSpec{ID: id, Currency: "USD"})
		fund(t, b, id, 100)
	}
	w.commit(b)
	for batch := range 3 {
		id := fmt.Sprintf("x%d", batch)
		req := TransferRequest{ID: id, From: "acct-1", To: "acct-2", Amount: 1}
		first := mustTransfer(t, b, req, t0)
		again, replayed, err := b.Transfer(req, t0)
		if err != nil || !replayed || again.ID != first.ID {
			t.Fatalf("batch %d: retry in the same batch = %+v, replayed %v, %v", batch, again, replayed, err)
		}
		w.commit(b)
		again, replayed, err = b.Transfer(req, t0)
		if err != nil || !replayed || again.ID != first.ID {
			t.Fatalf("batch %d: retry after the commit = %+v, replayed %v, %v", batch, again, replayed, err)
		}
		w.commit(b)
	}
	if a, _ := b.Account("acct-1"); a.Balance != 97 {
		t.Errorf("acct-1 balance %d after three transfers of 1 from 100, want 97", a.Balance)
	}
}

// BenchmarkSmallBatchesAfterLargeSetup is the ledger's steady state after
// `surge bench transfer`'s setup: 50,000 accounts opened and funded, then
// batches of 25 transfers, each committed and Reset.
func BenchmarkSmallBatchesAfterLargeSetup(b *testing.B) {
	w := newWorld()
	book := NewBook(w.view(0))
	const accounts = 50000
	ids := make([]string, accounts)
	if _, _, err := book.CreateAccount(AccountSpec{ID: WorldID, Currency: "USD"}, t0); err != nil {
		b.Fatal(err)
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("acct-%d", i)
		if _, _, err := book.CreateAccount(AccountSpec{ID: ids[i], Currency: "USD"}, t0); err != nil {
			b.Fatal(err)
		}
		if _, _, err := book.Transfer(TransferRequest{From: WorldID, To: ids[i], Amount: 1 << 40}, t0); err != nil {
			b.Fatal(err)
		}
	}
	w.commit(book)
	b.ResetTimer()
	for i := range b.N {
		from, to := ids[i%accounts], ids[(i*7+1)%accounts]
		if _, _, err := book.Transfer(TransferRequest{From: from, To: to, Amount: 1}, t0); err != nil {
			b.Fatal(err)
		}
		if i%25 == 24 {
			w.commit(book)
		}
	}
}
