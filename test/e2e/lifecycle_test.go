package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// TestLedgerLifecycle walks the single-phase ledger API of docs/API.md:
// accounts, funding, transfers, idempotency, refusals and history.
func TestLedgerLifecycle(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "4")
	t.Run("accounts", func(t *testing.T) { testAccounts(t, srv.c) })
	t.Run("transfers", func(t *testing.T) { testTransfers(t, srv.c) })
	t.Run("idempotency", func(t *testing.T) { testIdempotency(t, srv.c) })
	t.Run("idempotency_race", func(t *testing.T) { testIdempotencyRace(t, srv.c) })
	t.Run("account_race", func(t *testing.T) { testAccountRace(t, srv.c) })
	t.Run("system_account", func(t *testing.T) { testSystemAccount(t, srv.c) })
	t.Run("refusals", func(t *testing.T) { testRefusals(t, srv.c) })
	t.Run("overdraft", func(t *testing.T) { testOverdraft(t, srv.c) })
	t.Run("history", func(t *testing.T) { testHistory(t, srv.c) })
	t.Run("history_limits", func(t *testing.T) { testHistoryLimits(t, srv.c) })
	t.Run("stable_cursor", func(t *testing.T) { testStableCursor(t, srv.c) })
}

// testAccounts: 201 on creation, 200 on an identical replay, 409
// account_exists on other attributes, and the documented account fields.
func testAccounts(t *testing.T, c *Client) {
	before := mustStats(t, c)
	spec := NewAccount{ID: "lc-alice", Currency: currency, Metadata: map[string]string{"tier": "gold"}}
	a := mustCreateAccount(t, c, spec)
	wantNewAccount(t, a, spec)
	if now := mustStats(t, c); now.Accounts != before.Accounts+1 {
		t.Errorf("stats accounts %d after one creation, was %d", now.Accounts, before.Accounts)
	}

	again, r, err := c.CreateAccount(spec)
	must(t, r, err, http.StatusOK, "")
	if !reflect.DeepEqual(again, a) {
		t.Errorf("replayed account creation: got %+v, want the first %+v", again, a)
	}
	for _, other := range []NewAccount{
		{ID: spec.ID, Currency: "EUR", Metadata: spec.Metadata},
		{ID: spec.ID, Currency: currency, OverdraftLimit: 10, Metadata: spec.Metadata},
		{ID: spec.ID, Currency: currency, Metadata: map[string]string{"tier": "silver"}},
		{ID: spec.ID, Currency: currency},
	} {
		_, r, err := c.CreateAccount(other)
		want(t, r, err, http.StatusConflict, "account_exists")
	}
	if got := mustAccount(t, c, spec.ID); !reflect.DeepEqual(got, a) {
		t.Errorf("GET account: got %+v, want %+v", got, a)
	}
	if now := mustStats(t, c); now.Accounts != before.Accounts+1 {
		t.Errorf("stats accounts %d after replays and conflicts, want %d", now.Accounts, before.Accounts+1)
	}

	od := NewAccount{ID: "lc-od", Currency: currency, OverdraftLimit: 75}
	wantNewAccount(t, mustCreateAccount(t, c, od), od)

	w := mustAccount(t, c, world)
	if !w.System || w.Currency != currency {
		t.Errorf("@world: got %+v, want a system account in %s", w, currency)
	}
	_, r, err = c.Account("lc-nobody")
	want(t, r, err, http.StatusNotFound, "account_not_found")

	r, err = c.raw(http.MethodPost, "/v1/accounts", "application/json; charset=utf-8", []byte(`{"id":"lc-charset","currency":"USD"}`))
	want(t, r, err, http.StatusCreated, "")
}

// wantNewAccount checks a freshly created account against its spec.
func wantNewAccount(t *testing.T, a Account, spec NewAccount) {
	t.Helper()
	if a.ID != spec.ID || a.Currency != spec.Currency || a.OverdraftLimit != spec.OverdraftLimit ||
		a.Balance != 0 || a.Pending != 0 || a.Available != 0 || a.System || a.Entries != 0 {
		t.Errorf("new account: got %+v for %+v", a, spec)
	}
	if len(spec.Metadata) > 0 && !reflect.DeepEqual(a.Metadata, spec.Metadata) {
		t.Errorf("new account metadata: got %v, want %v", a.Metadata, spec.Metadata)
	}
	parseTime(t, "account created_at", a.CreatedAt)
}

// testTransfers: funding from @world, a transfer with every field, GET of
// a transfer, and server-assigned ids.
func testTransfers(t *testing.T, c *Client) {
	openAccounts(t, c, "tr-a", "tr-b")
	w0 := mustAccount(t, c, world)
	fundReq := TransferReq{ID: "tr-fund", From: world, To: "tr-a", Amount: 100, Memo: "funding"}
	wantTransferFields(t, mustTransfer(t, c, fundReq), fundReq, "posted", 100)
	wantBalance(t, c, "tr-a", 100, 0)
	if w := mustAccount(t, c, world); w.Balance != w0.Balance-100 {
		t.Errorf("@world balance %d after funding 100, was %d", w.Balance, w0.Balance)
	}

	req := TransferReq{ID: "tr-1", From: "tr-a", To: "tr-b", Amount: 30, Currency: currency, Memo: "rent"}
	tr := mustTransfer(t, c, req)
	wantTransferFields(t, tr, req, "posted", 30)
	wantBalance(t, c, "tr-a", 70, 0)
	wantBalance(t, c, "tr-b", 30, 0)
	if got := mustGetTransfer(t, c, "tr-1"); !reflect.DeepEqual(got, tr) {
		t.Errorf("GET transfer: got %+v, want %+v", got, tr)
	}
	wantTransferNotFound(t, c, "tr-missing")

	anon1 := mustTransfer(t, c, TransferReq{From: "tr-a", To: "tr-b", Amount: 1})
	anon2 := mustTransfer(t, c, TransferReq{From: "tr-a", To: "tr-b", Amount: 1})
	if anon1.ID == "" || anon1.ID == anon2.ID {
		t.Errorf("server-assigned ids should be unique and non-empty: %q, %q", anon1.ID, anon2.ID)
	}
	mustGetTransfer(t, c, anon1.ID)
	wantBalance(t, c, "tr-b", 32, 0)
}

// wantTransferFields checks a transfer object against the request that
// made it.
func wantTransferFields(t *testing.T, got Transfer, req TransferReq, state string, posted int64) {
	t.Helper()
	if got.ID != req.ID || got.From != req.From || got.To != req.To || got.Amount != req.Amount ||
		got.Currency != currency || got.Memo != req.Memo || got.State != state ||
		got.Pending != req.Pending || got.PostedAmount != posted || got.TimeoutMS != req.TimeoutMS {
		t.Errorf("transfer: got %+v for %+v, want state %s posted_amount %d", got, req, state, posted)
	}
	parseTime(t, "transfer created_at", got.CreatedAt)
	parseTime(t, "transfer updated_at", got.UpdatedAt)
}

// testIdempotency: the same id and body replays the first result with 200;
// the same id with any other body is 409 idempotency_conflict and changes
// nothing, also when the other body names another source account (which
// may live on another shard).
func testIdempotency(t *testing.T, c *Client) {
	openAccounts(t, c, "id-a", "id-b", "id-c")
	fund(t, c, "id-a", 100)
	others := make([]string, 8)
	for i := range others {
		others[i] = fmt.Sprintf("id-from-%d", i)
		openAccounts(t, c, others[i])
		fund(t, c, others[i], 100)
	}
	req := TransferReq{ID: "id-1", From: "id-a", To: "id-b", Amount: 10, Memo: "once"}
	first := mustTransfer(t, c, req)
	again, r, err := c.Transfer(req)
	must(t, r, err, http.StatusOK, "")
	if !reflect.DeepEqual(again, first) {
		t.Errorf("replay: got %+v, want the first result %+v", again, first)
	}

	snap := takeSnapshot(t, c, append([]string{"id-a", "id-b", "id-c"}, others...)...)
	conflicts := []TransferReq{
		{ID: req.ID, From: req.From, To: req.To, Amount: 11, Memo: req.Memo},
		{ID: req.ID, From: req.From, To: "id-c", Amount: req.Amount, Memo: req.Memo},
		{ID: req.ID, From: req.From, To: req.To, Amount: req.Amount, Memo: "twice"},
		{ID: req.ID, From: "id-b", To: "id-a", Amount: req.Amount, Memo: req.Memo},
		{ID: req.ID, From: req.From, To: req.To, Amount: req.Amount, Memo: req.Memo, Pending: true},
	}
	for _, from := range others {
		conflicts = append(conflicts, TransferReq{ID: req.ID, From: from, To: req.To, Amount: req.Amount, Memo: req.Memo})
	}
	for _, other := range conflicts {
		_, r, err := c.Transfer(other)
		want(t, r, err, http.StatusConflict, "idempotency_conflict")
	}
	snap.wantUnchanged(t, c)
	if got := mustGetTransfer(t, c, req.ID); !reflect.DeepEqual(got, first) {
		t.Errorf("after conflicts GET %s: got %+v, want %+v", req.ID, got, first)
	}
}

// raceRounds is how many ids the race subtests contend on, and raceClients
// how many concurrent requests each id gets.
const (
	raceRounds  = 20
	raceClients = 16
)

// race sends raceClients requests at once through send(i) and returns
// their answers in order.
func race(t *testing.T, send func(i int) (*Response, error)) []*Response {
	t.Helper()
	out := make([]*Response, raceClients)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			<-start
			r, err := send(i)
			if err != nil {
				t.Errorf("racing request %d: %v", i, err)
				return
			}
			out[i] = r
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// wantOneWinner checks the answers of a race in which even and odd
// requests carry two different bodies for one id: exactly one is 201, the
// others with the same body 200, and those with the other body 409 with
// conflict. It returns the index of the winner.
func wantOneWinner(t *testing.T, what string, answers []*Response, conflict string) int {
	t.Helper()
	winner := -1
	for i, r := range answers {
		if r.Status == http.StatusCreated {
			if winner >= 0 {
				t.Errorf("%s created twice: by request %d and %d", what, winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no request created it: %v", what, answers[0])
	}
	for i, r := range answers {
		switch {
		case i == winner:
		case i%2 == winner%2:
			want(t, r, nil, http.StatusOK, "")
		default:
			want(t, r, nil, http.StatusConflict, conflict)
		}
	}
	return winner
}

// testIdempotencyRace: many clients send the same transfer id at once,
// half with one body and half with another whose source is another
// account (likely on another shard). Exactly one is created; the others
// with its body are replays (200) and those with the other body 409
// idempotency_conflict; money moves once.
func testIdempotencyRace(t *testing.T, c *Client) {
	openAccounts(t, c, "ir-a", "ir-b", "ir-to")
	fund(t, c, "ir-a", 1000)
	fund(t, c, "ir-b", 1000)
	for round := range raceRounds {
		id := fmt.Sprintf("ir-%d", round)
		bodies := [2]TransferReq{{ID: id, From: "ir-a", To: "ir-to", Amount: 1}, {ID: id, From: "ir-b", To: "ir-to", Amount: 2}}
		answers := race(t, func(i int) (*Response, error) {
			_, r, err := c.Transfer(bodies[i%2])
			return r, err
		})
		winner := wantOneWinner(t, id, answers, "idempotency_conflict")
		if got := mustGetTransfer(t, c, id); got.From != bodies[winner%2].From {
			t.Errorf("%s stored as %+v, but request %d (%s) created it", id, got, winner, bodies[winner%2].From)
		}
	}
	a, b := mustAccount(t, c, "ir-a"), mustAccount(t, c, "ir-b")
	to := mustAccount(t, c, "ir-to")
	if moved := (1000 - a.Balance) + (1000 - b.Balance); moved != to.Balance || a.Entries+b.Entries != 2+raceRounds {
		t.Errorf("after %d contended ids: ir-a %+v, ir-b %+v, ir-to %+v; want one transfer per id", raceRounds, a, b, to)
	}
}

// testAccountRace: many clients open the same account id at once, half
// in one currency and half in another. Exactly one is created; the others
// with its attributes get 200 and the rest 409 account_exists.
func testAccountRace(t *testing.T, c *Client) {
	for round := range raceRounds {
		id := fmt.Sprintf("ar-%d", round)
		specs := [2]NewAccount{{ID: id, Currency: currency}, {ID: id, Currency: "EUR"}}
		answers := race(t, func(i int) (*Response, error) {
			_, r, err := c.CreateAccount(specs[i%2])
			return r, err
		})
		winner := wantOneWinner(t, "account "+id, answers, "account_exists")
		if got := mustAccount(t, c, id); got.Currency != specs[winner%2].Currency {
			t.Errorf("account %s is %+v, but request %d created it", id, got, winner)
		}
	}
}

// testSystemAccount: a client may open another system account (id
// starting with @), in another currency; it may go negative without limit,
// and the balances of that currency still sum to 0.
func testSystemAccount(t *testing.T, c *Client) {
	sys := mustCreateAccount(t, c, NewAccount{ID: "@lc-mint", Currency: "EUR"})
	if !sys.System {
		t.Errorf("@lc-mint: %+v, want system", sys)
	}
	mustCreateAccount(t, c, NewAccount{ID: "lc-eur", Currency: "EUR"})
	mustTransfer(t, c, TransferReq{From: "@lc-mint", To: "lc-eur", Amount: 1 << 40})
	wantBalance(t, c, "@lc-mint", -(1 << 40), 0)
	wantBalance(t, c, "lc-eur", 1<<40, 0)
	if s := mustStats(t, c); s.BalanceSum["EUR"] != 0 || s.BalanceSum[currency] != 0 {
		t.Errorf("balance_sum %v, want 0 for every currency", s.BalanceSum)
	}
}

// refusal is a transfer the server must refuse, and how.
type refusal struct {
	name   string
	req    TransferReq
	status int
	code   string
}

// testRefusals: each refused transfer gets its documented status and code,
// changes no balance and leaves no transfer behind; a refused id can be
// used once the transfer becomes valid.
func testRefusals(t *testing.T, c *Client) {
	openAccounts(t, c, "rf-a", "rf-b")
	mustCreateAccount(t, c, NewAccount{ID: "rf-eur", Currency: "EUR"})
	fund(t, c, "rf-a", 100)
	snap := takeSnapshot(t, c, "rf-a", "rf-b", "rf-eur")
	cases := []refusal{
		{"insufficient_funds", TransferReq{From: "rf-a", To: "rf-b", Amount: 101}, 422, "insufficient_funds"},
		{"currency_mismatch_accounts", TransferReq{From: "rf-a", To: "rf-eur", Amount: 1}, 422, "currency_mismatch"},
		{"currency_mismatch_request", TransferReq{From: "rf-a", To: "rf-b", Amount: 1, Currency: "EUR"}, 422, "currency_mismatch"},
		{"same_account", TransferReq{From: "rf-a", To: "rf-a", Amount: 1}, 422, "same_account"},
		{"unknown_to", TransferReq{From: "rf-a", To: "rf-ghost", Amount: 1}, 404, "account_not_found"},
		{"unknown_from", TransferReq{From: "rf-ghost", To: "rf-a", Amount: 1}, 404, "account_not_found"},
	}
	for i := range cases {
		cases[i].req.ID = "rf-" + cases[i].name
		t.Run(cases[i].name, func(t *testing.T) {
			_, r, err := c.Transfer(cases[i].req)
			want(t, r, err, cases[i].status, cases[i].code)
			wantTransferNotFound(t, c, cases[i].req.ID)
		})
	}
	snap.wantUnchanged(t, c)

	fund(t, c, "rf-a", 1)
	mustTransfer(t, c, cases[0].req)
	wantBalance(t, c, "rf-a", 0, 0)
}

// testOverdraft: an account may go down to -overdraft_limit, not further.
func testOverdraft(t *testing.T, c *Client) {
	mustCreateAccount(t, c, NewAccount{ID: "ov-a", Currency: currency, OverdraftLimit: 50})
	openAccounts(t, c, "ov-b")
	mustTransfer(t, c, TransferReq{From: "ov-a", To: "ov-b", Amount: 30})
	snap := takeSnapshot(t, c, "ov-a", "ov-b")
	_, r, err := c.Transfer(TransferReq{From: "ov-a", To: "ov-b", Amount: 21})
	want(t, r, err, http.StatusUnprocessableEntity, "insufficient_funds")
	snap.wantUnchanged(t, c)
	mustTransfer(t, c, TransferReq{From: "ov-a", To: "ov-b", Amount: 20})
	wantBalance(t, c, "ov-a", -50, 0)
	_, r, err = c.Transfer(TransferReq{From: "ov-a", To: "ov-b", Amount: 1})
	want(t, r, err, http.StatusUnprocessableEntity, "insufficient_funds")
	wantBalance(t, c, "ov-a", -50, 0)
}

// historyFixture makes 60 movements on h-a: a funding, then transfers to
// and from h-b, and returns them oldest first.
func historyFixture(t *testing.T, c *Client) []TransferReq {
	t.Helper()
	openAccounts(t, c, "h-a", "h-b")
	reqs := []TransferReq{{ID: "h-fund", From: world, To: "h-a", Amount: 10000, Memo: "fund"}}
	for i := range 59 {
		r := TransferReq{ID: fmt.Sprintf("h-%02d", i), From: "h-a", To: "h-b", Amount: int64(i + 1), Memo: fmt.Sprintf("m%d", i)}
		if i%3 == 2 {
			r.From, r.To, r.Amount = "h-b", "h-a", 1
		}
		reqs = append(reqs, r)
	}
	for _, r := range reqs {
		mustTransfer(t, c, r)
	}
	return reqs
}

// testHistory: newest first, each entry as its transfer, cursor paging and
// offset paging give the same sequence, consistent with the balance.
func testHistory(t *testing.T, c *Client) {
	reqs := historyFixture(t, c)
	byCursor, err := c.History("h-a", 7)
	if err != nil {
		t.Fatal(err)
	}
	byOffset, err := c.HistoryByOffset("h-a", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byCursor, byOffset) {
		t.Errorf("cursor and offset paging differ:\ncursor %+v\noffset %+v", byCursor, byOffset)
	}
	if len(byCursor) != len(reqs) {
		t.Fatalf("history of h-a has %d entries, want %d", len(byCursor), len(reqs))
	}
	newestFirst := slices.Clone(reqs)
	slices.Reverse(newestFirst)
	for i, e := range byCursor {
		wantEntryOf(t, e, "h-a", newestFirst[i])
	}
	wantAccountMatchesHistory(t, mustAccount(t, c, "h-a"), byCursor)
	wantAccountMatchesHistory(t, mustAccount(t, c, "h-b"), mustHistory(t, c, "h-b"))
}

// wantEntryOf checks that a history entry of account is the movement of req.
func wantEntryOf(t *testing.T, e Entry, account string, req TransferReq) {
	t.Helper()
	dir, other := "credit", req.From
	if req.From == account {
		dir, other = "debit", req.To
	}
	if e.TransferID != req.ID || e.Direction != dir || e.Amount != req.Amount || e.Counterpart != other || e.Memo != req.Memo {
		t.Errorf("%s history entry %+v, want %s %s of %d with %s memo %q", account, e, req.ID, dir, req.Amount, other, req.Memo)
	}
	parseTime(t, "entry created_at", e.CreatedAt)
}

// testHistoryLimits: default page size 50, limit bounds 1..1000, the
// cursor of the last page, and offsets at and past the end.
func testHistoryLimits(t *testing.T, c *Client) {
	all := mustHistory(t, c, "h-a") // made by the history subtest
	if len(all) != 60 {
		t.Fatalf("h-a has %d entries, want 60 (history subtest)", len(all))
	}
	page := func(q url.Values) Page {
		t.Helper()
		p, r, err := c.HistoryPage("h-a", q)
		must(t, r, err, http.StatusOK, "")
		return p
	}
	first := page(nil)
	if !reflect.DeepEqual(first.Items, all[:50]) || first.NextCursor == "" {
		t.Errorf("default page: %d items, next_cursor %q; want the newest 50 and a cursor", len(first.Items), first.NextCursor)
	}
	if rest := page(url.Values{"cursor": {first.NextCursor}}); !reflect.DeepEqual(rest.Items, all[50:]) || rest.NextCursor != "" {
		t.Errorf("second page: %d items, next_cursor %q; want the oldest 10 and no cursor", len(rest.Items), rest.NextCursor)
	}
	if p := page(url.Values{"limit": {"1"}}); len(p.Items) != 1 || p.Items[0] != all[0] {
		t.Errorf("limit=1: got %+v, want only the newest %+v", p.Items, all[0])
	}
	if p := page(url.Values{"limit": {"1000"}}); len(p.Items) != 60 || p.NextCursor != "" {
		t.Errorf("limit=1000: %d items, next_cursor %q; want 60 and none", len(p.Items), p.NextCursor)
	}
	if p := page(url.Values{"limit": {"10"}, "offset": {"55"}}); !reflect.DeepEqual(p.Items, all[55:]) {
		t.Errorf("offset=55: got %+v, want the oldest 5", p.Items)
	}
	if p := page(url.Values{"offset": {"60"}}); len(p.Items) != 0 {
		t.Errorf("offset=60: got %d items, want none", len(p.Items))
	}
	for _, bad := range []string{"0", "1001", "-1"} {
		_, r, err := c.HistoryPage("h-a", url.Values{"limit": {bad}})
		want(t, r, err, http.StatusBadRequest, "invalid_argument")
	}
	_, r, err := c.HistoryPage("h-nobody", nil)
	want(t, r, err, http.StatusNotFound, "account_not_found")
}

// testStableCursor: a cursor keeps its place while new entries arrive:
// the pages read before and after them join without gap or repeat, and
// the new entries come first in a fresh read.
func testStableCursor(t *testing.T, c *Client) {
	openAccounts(t, c, "sc-a", "sc-b")
	for range 10 {
		fund(t, c, "sc-a", 1)
	}
	before := mustHistory(t, c, "sc-a")
	first, r, err := c.HistoryPage("sc-a", url.Values{"limit": {"4"}})
	must(t, r, err, http.StatusOK, "")
	for range 3 {
		mustTransfer(t, c, TransferReq{From: "sc-a", To: "sc-b", Amount: 1})
	}
	rest, r, err := c.HistoryPage("sc-a", url.Values{"limit": {"1000"}, "cursor": {first.NextCursor}})
	must(t, r, err, http.StatusOK, "")
	if joined := append(first.Items, rest.Items...); !reflect.DeepEqual(joined, before) {
		t.Errorf("pages around new entries: got %+v, want %+v", joined, before)
	}
	if now := mustHistory(t, c, "sc-a"); len(now) != 13 || !reflect.DeepEqual(now[3:], before) {
		t.Errorf("history after 3 more entries: %+v, want them before %+v", now, before)
	}
}
