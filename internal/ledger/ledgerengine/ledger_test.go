package ledgerengine

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
	"github.com/surge-dev/surge/internal/store"
)

var ctx = context.Background()

// opts sets up an engine and its ledger for a test.
type opts struct {
	Dir             string
	Shards          int
	QueueCapacity   int
	MaxBatch        int
	DefaultCurrency string
	SweepEntries    int
	// parallel is the engine's ParallelSize.
	parallel int
}

func openEngine(t testing.TB, o opts) *Ledger {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	eng, err := engine.Open(engine.Config{Dir: o.Dir, Shards: o.Shards, QueueCapacity: o.QueueCapacity,
		MaxBatch: o.MaxBatch, ParallelSize: o.parallel, Logger: log})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	l, err := Open(eng, Config{DefaultCurrency: o.DefaultCurrency, SweepEntries: o.SweepEntries, Logger: log})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(l.Close)
	eng.Start()
	if err := l.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return l
}

func closeEngine(t testing.TB, e *Ledger) {
	t.Helper()
	e.Close()
	if err := e.eng.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// namesOn returns n account ids that live on shard i.
func namesOn(e *Ledger, i, n int, prefix string) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		id := fmt.Sprintf("%s%d", prefix, k)
		if e.eng.ShardOf(id) == i {
			out = append(out, id)
		}
	}
	return out
}

func mustOpenAccount(t testing.TB, e *Ledger, id string, overdraft int64) {
	t.Helper()
	if _, created, err := e.CreateAccount(ctx, ledger.AccountSpec{ID: id, Currency: "USD", OverdraftLimit: overdraft}); err != nil || !created {
		t.Fatalf("CreateAccount(%s): created %v, %v", id, created, err)
	}
}

func mustTransfer(t testing.TB, e *Ledger, req ledger.TransferRequest) ledger.Transfer {
	t.Helper()
	tr, replayed, err := e.Transfer(ctx, req)
	if err != nil || replayed {
		t.Fatalf("Transfer(%+v): replayed %v, %v", req, replayed, err)
	}
	return tr
}

func balance(t testing.TB, e *Ledger, id string) ledger.Account {
	t.Helper()
	a, err := e.Account(ctx, id)
	if err != nil {
		t.Fatalf("Account(%s): %v", id, err)
	}
	return a
}

func wantBalance(t testing.TB, e *Ledger, id string, bal, pending int64) {
	t.Helper()
	if a := balance(t, e, id); a.Balance != bal || a.Pending != pending {
		t.Fatalf("%s: balance %d pending %d, want %d and %d", id, a.Balance, a.Pending, bal, pending)
	}
}

func wantCode(t testing.TB, err error, code ledger.Code) {
	t.Helper()
	if got := ledger.CodeOf(err); got != code {
		t.Fatalf("err %v, want code %s", err, code)
	}
}

func wantBalanced(t testing.TB, e *Ledger) ledger.Stats {
	t.Helper()
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for cur, sum := range st.BalanceSum {
		if sum != 0 {
			t.Fatalf("balance_sum[%s] = %d", cur, sum)
		}
	}
	return st
}

// fullHistory reads an account's whole history, newest first, page by page
// with the cursor, and checks the paging and the entries' arithmetic.
func fullHistory(t testing.TB, e *Ledger, id string, pageSize int) []ledger.Entry {
	t.Helper()
	a := balance(t, e, id)
	var all []ledger.Entry
	q := ledger.HistoryQuery{Limit: pageSize}
	for pages := 0; ; pages++ {
		page, err := e.History(ctx, id, q)
		if err != nil {
			t.Fatalf("History(%s): %v", id, err)
		}
		if len(page.Entries) > pageSize {
			t.Fatalf("History(%s) returned %d entries for limit %d", id, len(page.Entries), pageSize)
		}
		all = append(all, page.Entries...)
		if page.NextCursor == 0 {
			break
		}
		if pages > int(a.Entries) {
			t.Fatalf("History(%s) does not end", id)
		}
		q.Cursor = page.NextCursor
	}
	if uint64(len(all)) != a.Entries {
		t.Fatalf("%s: %d history entries, account says %d", id, len(all), a.Entries)
	}
	bal := a.Balance
	for i, en := range all {
		if en.Seq != a.Entries-uint64(i) {
			t.Fatalf("%s: entry %d has seq %d, want %d", id, i, en.Seq, a.Entries-uint64(i))
		}
		if en.BalanceAfter != bal {
			t.Fatalf("%s: entry seq %d balance_after %d, want %d", id, en.Seq, en.BalanceAfter, bal)
		}
		if en.Direction == ledger.Debit {
			bal += en.Amount
		} else {
			bal -= en.Amount
		}
	}
	if bal != 0 {
		t.Fatalf("%s: history does not start from 0 (%d)", id, bal)
	}
	return all
}

// parkEngine stops the engine in the middle of a round, until the returned
// func is called (also at cleanup): commands queued meanwhile wait in their
// shards' logs.
func parkEngine(t testing.TB, e *Ledger) func() {
	t.Helper()
	parked := make(chan struct{})
	release := make(chan struct{})
	if _, err := e.port.Exclusive(ctx, func(time.Time) {
		close(parked)
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	<-parked
	f := sync.OnceFunc(func() { close(release) })
	t.Cleanup(f)
	return f
}

// waitFor polls cond until it holds; only for conditions that depend on
// the clock (hold expiry), with a deadline far beyond the expected wait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOpenCreatesWorldAndAccounts(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, opts{Dir: dir, Shards: 3, DefaultCurrency: "EUR"})
	if e.eng.Shards() != 3 {
		t.Fatalf("shards %d", e.eng.Shards())
	}
	w := balance(t, e, ledger.WorldID)
	if w.Currency != "EUR" || !w.System() || w.Balance != 0 {
		t.Fatalf("@world %+v", w)
	}
	spec := ledger.AccountSpec{ID: "alice", Currency: "EUR", OverdraftLimit: 7, Metadata: map[string]string{"k": "v"}}
	a, created, err := e.CreateAccount(ctx, spec)
	if err != nil || !created || a.ID != "alice" || a.OverdraftLimit != 7 || a.Metadata["k"] != "v" || a.CreatedAt.IsZero() {
		t.Fatalf("create: %+v %v %v", a, created, err)
	}
	again, created, err := e.CreateAccount(ctx, spec)
	if err != nil || created || !again.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("replay: %+v %v %v", again, created, err)
	}
	spec.OverdraftLimit = 8
	_, _, err = e.CreateAccount(ctx, spec)
	wantCode(t, err, ledger.CodeAccountExists)
	_, err = e.Account(ctx, "ghost")
	wantCode(t, err, ledger.CodeAccountNotFound)
	_, err = e.History(ctx, "ghost", ledger.HistoryQuery{})
	wantCode(t, err, ledger.CodeAccountNotFound)
	_, err = e.GetTransfer(ctx, "nothing")
	wantCode(t, err, ledger.CodeTransferNotFound)
	_, err = e.PostPending(ctx, "nothing", 0)
	wantCode(t, err, ledger.CodeTransferNotFound)
	_, err = e.VoidPending(ctx, "nothing")
	wantCode(t, err, ledger.CodeTransferNotFound)
	_, _, err = e.Transfer(ctx, ledger.TransferRequest{From: "alice", To: "ghost", Amount: 1})
	wantCode(t, err, ledger.CodeAccountNotFound)
	st := wantBalanced(t, e)
	if st.Accounts != 2 {
		t.Fatalf("stats count %d accounts", st.Accounts)
	}

	// @world keeps its currency across restarts whatever the flag says.
	closeEngine(t, e)
	e = openEngine(t, opts{Dir: dir, Shards: 3, DefaultCurrency: "USD"})
	if w := balance(t, e, ledger.WorldID); w.Currency != "EUR" {
		t.Fatalf("@world currency %s after reopen", w.Currency)
	}
	got := balance(t, e, "alice")
	if got.OverdraftLimit != 7 || got.Metadata["k"] != "v" || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("alice after reopen %+v", got)
	}
}

// acked is a transfer the engine acknowledged, with the money it moved.
type acked struct {
	id, from, to string
	moved        int64
	state        ledger.TransferState
}

func TestConcurrentTransfersAndReopen(t *testing.T) {
	t.Run("default sweep", func(t *testing.T) { testConcurrentTransfersAndReopen(t, 0, 0) })
	// Sweeps every few hundred entries: chunks of every size, and journal
	// records trimmed while the load runs. Reopening without a clean close
	// replays what is left of the journal.
	t.Run("short sweeps", func(t *testing.T) { testConcurrentTransfersAndReopen(t, 200, 0) })
	// Rounds this small run their later steps one shard after another on
	// the round's goroutine; here every round hands them to the shards.
	t.Run("steps on the shards", func(t *testing.T) { testConcurrentTransfersAndReopen(t, 200, 1) })
}

func testConcurrentTransfersAndReopen(t *testing.T, sweep, parallelEntries int) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ENGINE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with ENGINE_SEED=%d)", seed, seed)
	dir := t.TempDir()
	e := openEngine(t, opts{Dir: dir, Shards: 4, MaxBatch: 64, SweepEntries: sweep, parallel: parallelEntries})

	const nAccounts, funding = 100, 1000
	ids := make([]string, nAccounts)
	for i := range ids {
		ids[i] = fmt.Sprintf("acc-%03d", i)
		mustOpenAccount(t, e, ids[i], 0)
	}
	var mu sync.Mutex
	var done []acked
	// Funding as one non-atomic batch, all debiting @world's shard.
	var fundReqs []ledger.TransferRequest
	for _, id := range ids {
		fundReqs = append(fundReqs, ledger.TransferRequest{ID: "fund-" + id, From: ledger.WorldID, To: id, Amount: funding})
	}
	res, err := e.TransferBatch(ctx, fundReqs, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Transfer.ID != fundReqs[i].ID {
			t.Fatalf("funding item %d: %+v", i, r)
		}
		done = append(done, acked{r.Transfer.ID, ledger.WorldID, fundReqs[i].To, funding, ledger.StatePosted})
	}

	workers, perWorker := 16, 120
	if testing.Short() {
		workers, perWorker = 8, 40
	}
	// Meanwhile Stats must balance at every moment.
	stop := make(chan struct{})
	statsDone := make(chan int)
	go func() {
		polls := 0
		defer func() { statsDone <- polls }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := e.Stats(ctx)
			if err != nil {
				t.Errorf("Stats: %v", err)
				return
			}
			if sum := st.BalanceSum["USD"]; sum != 0 {
				t.Errorf("Stats under load: balances sum to %d", sum)
				return
			}
			polls++
		}
	}()
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			var mine []ledger.TransferRequest
			record := func(a acked) {
				mu.Lock()
				done = append(done, a)
				mu.Unlock()
			}
			for i := range perWorker {
				from, to := ids[rng.IntN(nAccounts)], ids[rng.IntN(nAccounts)]
				for to == from {
					to = ids[rng.IntN(nAccounts)]
				}
				req := ledger.TransferRequest{From: from, To: to, Amount: 1 + rng.Int64N(400)}
				if rng.IntN(4) > 0 {
					req.ID = fmt.Sprintf("w%d-%d", g, i)
				}
				switch op := rng.IntN(10); {
				case op == 0 && len(mine) > 0: // replay
					prev := mine[rng.IntN(len(mine))]
					tr, replayed, err := e.Transfer(ctx, prev)
					if err != nil || !replayed || tr.ID != prev.ID {
						t.Errorf("replay of %s: %+v %v %v", prev.ID, tr, replayed, err)
					}
				case op == 1: // two-phase
					req.Pending = true
					req.ID = fmt.Sprintf("w%d-%d-p", g, i)
					tr, _, err := e.Transfer(ctx, req)
					if err != nil {
						if ledger.CodeOf(err) != ledger.CodeInsufficientFunds {
							t.Errorf("hold %s: %v", req.ID, err)
						}
						continue
					}
					if tr.State != ledger.StatePending {
						t.Errorf("hold %s is %s", tr.ID, tr.State)
					}
					if rng.IntN(2) == 0 {
						v, err := e.VoidPending(ctx, tr.ID)
						if err != nil || v.State != ledger.StateVoided {
							t.Errorf("void %s: %+v %v", tr.ID, v, err)
							continue
						}
						record(acked{tr.ID, from, to, 0, ledger.StateVoided})
					} else {
						p, err := e.PostPending(ctx, tr.ID, rng.Int64N(req.Amount+1))
						if err != nil || p.State != ledger.StatePosted {
							t.Errorf("post %s: %+v %v", tr.ID, p, err)
							continue
						}
						record(acked{tr.ID, from, to, p.PostedAmount, ledger.StatePosted})
					}
				default:
					tr, replayed, err := e.Transfer(ctx, req)
					if err != nil {
						if ledger.CodeOf(err) != ledger.CodeInsufficientFunds {
							t.Errorf("transfer %+v: %v", req, err)
						}
						continue
					}
					if replayed || tr.From != from || tr.To != to || tr.Amount != req.Amount || tr.State != ledger.StatePosted || tr.ID == "" {
						t.Errorf("transfer %+v returned %+v replayed %v", req, tr, replayed)
						continue
					}
					if req.ID != "" {
						mine = append(mine, req)
					}
					record(acked{tr.ID, from, to, req.Amount, ledger.StatePosted})
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("Stats polled %d times under load", <-statsDone)
	if t.Failed() {
		t.FailNow()
	}

	// Every call has returned: the ledger balances exactly, nothing in flight.
	st := wantBalanced(t, e)
	if st.Accounts != nAccounts+1 {
		t.Fatalf("%d accounts", st.Accounts)
	}
	want := map[string]int64{}
	for _, a := range done {
		want[a.from] -= a.moved
		want[a.to] += a.moved
	}
	for _, id := range append([]string{ledger.WorldID}, ids...) {
		if a := balance(t, e, id); a.Balance != want[id] || a.Pending != 0 {
			t.Fatalf("%s: balance %d pending %d, acknowledged transfers say %d and 0", id, a.Balance, a.Pending, want[id])
		}
	}

	// Every acknowledged movement is in both histories, once.
	histories := map[string][]ledger.Entry{}
	seen := map[string]int{} // transfer id + direction → count
	for _, id := range append([]string{ledger.WorldID}, ids...) {
		h := fullHistory(t, e, id, 37)
		histories[id] = h
		for _, en := range h {
			seen[en.TransferID+"/"+en.Direction.String()+"/"+id]++
		}
	}
	moving := 0
	for _, a := range done {
		tr, err := e.GetTransfer(ctx, a.id)
		if err != nil || tr.State != a.state || tr.PostedAmount != a.moved {
			t.Fatalf("GetTransfer(%s) = %+v, %v; want state %s moved %d", a.id, tr, err, a.state, a.moved)
		}
		n := 0
		if a.moved > 0 {
			n = 1
			moving++
		}
		if got := seen[a.id+"/debit/"+a.from]; got != n {
			t.Fatalf("%s appears %d times as a debit of %s, want %d", a.id, got, a.from, n)
		}
		if got := seen[a.id+"/credit/"+a.to]; got != n {
			t.Fatalf("%s appears %d times as a credit of %s, want %d", a.id, got, a.to, n)
		}
	}
	total := 0
	for _, n := range seen {
		total += n
	}
	if total != 2*moving {
		t.Fatalf("%d history entries for %d acknowledged movements", total, moving)
	}
	t.Logf("%d acknowledged transfers, %d moved money", len(done), moving)
	if sweep > 0 {
		// The shards trim their journals once a checkpoint covers what
		// their last sweeps moved to chunks, at their next batch.
		checkpointAll(t, e)
		for i := range e.shards {
			trim := namesOn(e, i, 2, "trim")
			mustOpenAccount(t, e, trim[0], 1)
			mustOpenAccount(t, e, trim[1], 0)
			mustTransfer(t, e, ledger.TransferRequest{From: trim[0], To: trim[1], Amount: 1})
		}
		journaled := 0
		if err := e.db.EachJournalRecord(func(r *ledgerstore.JournalRecord) error { journaled += len(r.Entries); return nil }); err != nil {
			t.Fatal(err)
		}
		if journaled > 4*sweep || journaled >= total {
			t.Fatalf("the journal holds %d of %d entries, sweeps of %d", journaled, total, sweep)
		}
	}

	// Close and reopen: the same balances and histories.
	accounts := map[string]ledger.Account{}
	for _, id := range append([]string{ledger.WorldID}, ids...) {
		accounts[id] = balance(t, e, id)
	}
	closeEngine(t, e)
	e = openEngine(t, opts{Dir: dir, Shards: 4, SweepEntries: sweep})
	for id, before := range accounts {
		after := balance(t, e, id)
		if after.Balance != before.Balance || after.Pending != before.Pending || after.Entries != before.Entries ||
			after.Currency != before.Currency || !after.CreatedAt.Equal(before.CreatedAt) {
			t.Fatalf("%s after reopen %+v, before %+v", id, after, before)
		}
		if h := fullHistory(t, e, id, 1000); !reflect.DeepEqual(h, histories[id]) {
			t.Fatalf("%s: history differs after reopen", id)
		}
	}
	wantBalanced(t, e)
	// The ids are still known: a replay is a replay, another body a conflict.
	for _, a := range done[:10] {
		_, _, err := e.Transfer(ctx, ledger.TransferRequest{ID: a.id, From: a.from, To: a.to, Amount: 1 << 40})
		wantCode(t, err, ledger.CodeIdempotencyConflict)
	}
	if _, replayed, err := e.Transfer(ctx, fundReqs[0]); err != nil || !replayed {
		t.Fatalf("replay after reopen: %v %v", replayed, err)
	}
}

func TestPendingSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, opts{Dir: dir, Shards: 4})
	for _, id := range []string{"payer", "payee"} {
		mustOpenAccount(t, e, id, 0)
	}
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "payer", Amount: 100})
	mustTransfer(t, e, ledger.TransferRequest{ID: "p-post", From: "payer", To: "payee", Amount: 40, Pending: true})
	mustTransfer(t, e, ledger.TransferRequest{ID: "p-void", From: "payer", To: "payee", Amount: 30, Pending: true, Timeout: time.Hour})
	wantBalance(t, e, "payer", 100, 70)
	closeEngine(t, e)

	e = openEngine(t, opts{Dir: dir, Shards: 4})
	wantBalance(t, e, "payer", 100, 70)
	for _, id := range []string{"p-post", "p-void"} {
		if tr, err := e.GetTransfer(ctx, id); err != nil || tr.State != ledger.StatePending {
			t.Fatalf("%s after reopen: %+v %v", id, tr, err)
		}
	}
	// The holds still count against the balance.
	_, _, err := e.Transfer(ctx, ledger.TransferRequest{From: "payer", To: "payee", Amount: 31})
	wantCode(t, err, ledger.CodeInsufficientFunds)
	// ... and can be posted and voided.
	if tr, err := e.PostPending(ctx, "p-post", 25); err != nil || tr.State != ledger.StatePosted || tr.PostedAmount != 25 {
		t.Fatalf("post after reopen: %+v %v", tr, err)
	}
	if tr, err := e.VoidPending(ctx, "p-void"); err != nil || tr.State != ledger.StateVoided {
		t.Fatalf("void after reopen: %+v %v", tr, err)
	}
	wantBalance(t, e, "payer", 75, 0)
	wantBalance(t, e, "payee", 25, 0)
	_, err = e.PostPending(ctx, "p-post", 0)
	wantCode(t, err, ledger.CodeTransferNotPending)
	wantBalanced(t, e)
	closeEngine(t, e)
	e = openEngine(t, opts{Dir: dir, Shards: 4})
	wantBalance(t, e, "payer", 75, 0)
	wantBalance(t, e, "payee", 25, 0)
}

func TestHoldExpires(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
	mustOpenAccount(t, e, "a", 0)
	mustOpenAccount(t, e, "b", 0)
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "a", Amount: 100})
	tr := mustTransfer(t, e, ledger.TransferRequest{ID: "h", From: "a", To: "b", Amount: 60, Pending: true, Timeout: 50 * time.Millisecond})
	if !tr.ExpiresAt().Equal(tr.CreatedAt.Add(50 * time.Millisecond)) {
		t.Fatalf("expires at %v", tr.ExpiresAt())
	}
	wantBalance(t, e, "a", 100, 60)
	waitFor(t, "hold expiry", func() bool {
		got, err := e.GetTransfer(ctx, "h")
		return err == nil && got.State == ledger.StateExpired
	})
	wantBalance(t, e, "a", 100, 0)
	wantBalance(t, e, "b", 0, 0)
	_, err := e.PostPending(ctx, "h", 0)
	wantCode(t, err, ledger.CodeTransferNotPending)
	if h := fullHistory(t, e, "a", 10); len(h) != 1 {
		t.Fatalf("expiry wrote history: %+v", h)
	}
}

func TestHoldExpiresWhileClosed(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, opts{Dir: dir, Shards: 2})
	mustOpenAccount(t, e, "a", 0)
	mustOpenAccount(t, e, "b", 0)
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "a", Amount: 100})
	tr := mustTransfer(t, e, ledger.TransferRequest{ID: "h", From: "a", To: "b", Amount: 60, Pending: true, Timeout: time.Second})
	mustTransfer(t, e, ledger.TransferRequest{ID: "keep", From: "a", To: "b", Amount: 10, Pending: true})
	closeEngine(t, e)

	// Still pending on disk: the deadline passes while nothing runs.
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := (ledgerstore.Store{Store: s}).Transfer("h"); err != nil || got.State != ledger.StatePending {
		t.Fatalf("on disk after close: %+v %v (did it expire before Close?)", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(tr.ExpiresAt()) + 10*time.Millisecond) // the subject here is the clock

	e = openEngine(t, opts{Dir: dir, Shards: 2})
	waitFor(t, "expiry on reopen", func() bool {
		got, err := e.GetTransfer(ctx, "h")
		return err == nil && got.State == ledger.StateExpired
	})
	wantBalance(t, e, "a", 100, 10)
	if got, err := e.GetTransfer(ctx, "keep"); err != nil || got.State != ledger.StatePending {
		t.Fatalf("hold without timeout: %+v %v", got, err)
	}
	closeEngine(t, e)
	e = openEngine(t, opts{Dir: dir, Shards: 2})
	wantBalance(t, e, "a", 100, 10)
}

func TestAtomicBatchAcrossShards(t *testing.T) {
	dir := t.TempDir()
	// Every round's later steps on the shards' goroutines, around the
	// exclusive command (the default runs rounds this small on one).
	e := openEngine(t, opts{Dir: dir, Shards: 3, parallel: 1})
	a, b, c := namesOn(e, 0, 1, "a")[0], namesOn(e, 1, 1, "b")[0], namesOn(e, 2, 1, "c")[0]
	for _, id := range []string{a, b, c} {
		mustOpenAccount(t, e, id, 0)
	}
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: a, Amount: 100})

	// b spends what a credited it earlier in the same batch.
	ok := []ledger.TransferRequest{
		{ID: "x1", From: a, To: b, Amount: 60},
		{ID: "x2", From: b, To: c, Amount: 50},
		{ID: "x3", From: c, To: a, Amount: 5, Memo: "back"},
	}
	res, err := e.TransferBatch(ctx, ok, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Replayed || r.Transfer.ID != ok[i].ID || r.Transfer.State != ledger.StatePosted {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	wantBalance(t, e, a, 45, 0)
	wantBalance(t, e, b, 10, 0)
	wantBalance(t, e, c, 45, 0)
	wantBalanced(t, e)

	// The same items in another order fail (b has nothing yet): none applies.
	before := map[string]ledger.Account{}
	for _, id := range []string{a, b, c} {
		before[id] = balance(t, e, id)
	}
	bad := []ledger.TransferRequest{
		{ID: "y1", From: b, To: c, Amount: 50},
		{ID: "y2", From: a, To: b, Amount: 45},
	}
	bad2 := []ledger.TransferRequest{
		{ID: "y1", From: a, To: b, Amount: 45},
		{ID: "y2", From: b, To: c, Amount: 50},
		{ID: "y3", From: c, To: a, Amount: 1000},
	}
	for _, reqs := range [][]ledger.TransferRequest{bad, bad2} {
		res, err = e.TransferBatch(ctx, reqs, true)
		if err != nil {
			t.Fatal(err)
		}
		failed := len(reqs) - 1
		if reqs[0].From == b {
			failed = 0
		}
		for i, r := range res {
			want := ledger.CodeBatchAborted
			if i == failed {
				want = ledger.CodeInsufficientFunds
			}
			if ledger.CodeOf(r.Err) != want || r.Transfer.ID != reqs[i].ID {
				t.Fatalf("item %d of a failed atomic batch: %+v, want %s", i, r, want)
			}
		}
		for id, acct := range before {
			if got := balance(t, e, id); got.Balance != acct.Balance || got.Entries != acct.Entries {
				t.Fatalf("%s changed by a failed atomic batch: %+v", id, got)
			}
		}
		for _, r := range reqs {
			_, err := e.GetTransfer(ctx, r.ID)
			wantCode(t, err, ledger.CodeTransferNotFound)
		}
		wantBalanced(t, e)
	}
	// The failed batch's ids are free for other bodies.
	mustTransfer(t, e, ledger.TransferRequest{ID: "y1", From: a, To: c, Amount: 1})

	// Replaying the successful batch answers from the first run.
	res, err = e.TransferBatch(ctx, ok, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || !r.Replayed || r.Transfer.ID != ok[i].ID {
			t.Fatalf("replayed item %d: %+v", i, r)
		}
	}
	wantBalance(t, e, a, 44, 0)

	// Durable as one: after a restart both legs of every item are there.
	closeEngine(t, e)
	e = openEngine(t, opts{Dir: dir, Shards: 3})
	wantBalance(t, e, a, 44, 0)
	wantBalance(t, e, b, 10, 0)
	wantBalance(t, e, c, 46, 0)
	for _, id := range []string{a, b, c} {
		h := fullHistory(t, e, id, 2)
		for _, en := range h {
			if en.TransferID == "y2" || en.TransferID == "y3" {
				t.Fatalf("%s has an entry of a failed batch: %+v", id, en)
			}
		}
	}
	if h := fullHistory(t, e, b, 10); len(h) != 2 || h[0].TransferID != "x2" || h[1].TransferID != "x1" {
		t.Fatalf("history of b: %+v", h)
	}
	wantBalanced(t, e)
}

func TestAtomicBatchOneShard(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
	names := namesOn(e, 0, 3, "s")
	other := namesOn(e, 1, 1, "o")[0]
	for _, id := range append(names, other) {
		mustOpenAccount(t, e, id, 0)
	}
	x, y, z := names[0], names[1], names[2]
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: x, Amount: 100})

	res, err := e.TransferBatch(ctx, []ledger.TransferRequest{
		{ID: "o1", From: x, To: y, Amount: 70},
		{ID: "o2", From: y, To: z, Amount: 70},
		{ID: "o3", From: z, To: other, Amount: 20}, // a cross-shard credit
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	wantBalance(t, e, x, 30, 0)
	wantBalance(t, e, y, 0, 0)
	wantBalance(t, e, z, 50, 0)
	wantBalance(t, e, other, 20, 0)
	wantBalanced(t, e)

	res, err = e.TransferBatch(ctx, []ledger.TransferRequest{
		{ID: "f1", From: x, To: y, Amount: 30},
		{ID: "f2", From: z, To: other, Amount: 10},
		{ID: "f3", From: y, To: z, Amount: 31},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []ledger.Code{ledger.CodeBatchAborted, ledger.CodeBatchAborted, ledger.CodeInsufficientFunds} {
		if got := ledger.CodeOf(res[i].Err); got != want {
			t.Fatalf("item %d: %v, want %s", i, res[i].Err, want)
		}
	}
	wantBalance(t, e, x, 30, 0)
	wantBalance(t, e, z, 50, 0)
	wantBalance(t, e, other, 20, 0)
	wantBalanced(t, e)
	mustTransfer(t, e, ledger.TransferRequest{ID: "f1", From: x, To: z, Amount: 1})
}

// TestBatchResultsInOrder: a non-atomic batch runs its items in order per
// debiting shard. A credit from another shard's item may land before or
// after (the groups of a batch can fall in different rounds), so no
// expected outcome depends on one.
func TestBatchResultsInOrder(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 3})
	var ids []string
	for i := range 3 {
		ids = append(ids, namesOn(e, i, 2, fmt.Sprintf("n%d-", i))...)
	}
	for _, id := range ids {
		mustOpenAccount(t, e, id, 0)
		mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: id, Amount: 10})
	}
	mustTransfer(t, e, ledger.TransferRequest{ID: "old", From: ids[0], To: ids[1], Amount: 1})
	a0, a1, b0, b1, c0, c1 := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]
	reqs := []ledger.TransferRequest{
		{ID: "i0", From: b0, To: a0, Amount: 5},                              // ok
		{ID: "i1", From: a0, To: c0, Amount: 100},                            // insufficient
		{ID: "old", From: a0, To: a1, Amount: 1},                             // replay
		{ID: "i3", From: c1, To: c1, Amount: 1},                              // same account
		{ID: "i4", From: a0, To: "ghost", Amount: 1},                         // unknown receiver
		{ID: "i5", From: b0, To: b1, Amount: 6},                              // insufficient after i0 (order per source)
		{ID: "i6", From: b0, To: b1, Amount: 5},                              // ok: exactly what is left
		{ID: "old", From: a0, To: a1, Amount: 2},                             // conflict
		{From: c0, To: a1, Amount: 3},                                        // ok, server id
		{ID: "i9", From: a0, To: b1, Amount: 9},                              // ok: all a0 has (i0's credit may come later)
		{ID: "i0", From: b0, To: a0, Amount: 5},                              // replay within the batch
		{ID: "i11", From: "ghost", To: a0, Amount: 1},                        // unknown sender
		{ID: "i12", From: c0, To: a1, Amount: 1, Currency: "EUR"},            // currency mismatch
		{ID: "i13", From: c0, To: a1, Amount: 1, Currency: "USD", Memo: "m"}, // ok
	}
	res, err := e.TransferBatch(ctx, reqs, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d items", len(res), len(reqs))
	}
	type want struct {
		code     ledger.Code
		replayed bool
	}
	wants := []want{{}, {code: ledger.CodeInsufficientFunds}, {replayed: true}, {code: ledger.CodeSameAccount},
		{code: ledger.CodeAccountNotFound}, {code: ledger.CodeInsufficientFunds}, {}, {code: ledger.CodeIdempotencyConflict},
		{}, {}, {replayed: true}, {code: ledger.CodeAccountNotFound}, {code: ledger.CodeCurrencyMismatch}, {}}
	for i, r := range res {
		if ledger.CodeOf(r.Err) != wants[i].code || r.Replayed != wants[i].replayed {
			t.Fatalf("item %d (%+v): %+v, want %+v", i, reqs[i], r, wants[i])
		}
		if r.Err == nil {
			if reqs[i].ID != "" && r.Transfer.ID != reqs[i].ID || r.Transfer.From != reqs[i].From || r.Transfer.To != reqs[i].To {
				t.Fatalf("item %d answered with transfer %+v", i, r.Transfer)
			}
		}
	}
	if res[8].Transfer.ID == "" {
		t.Fatalf("no server id for item 8")
	}
	wantBalance(t, e, a0, 10-1-9+5, 0)
	wantBalance(t, e, b0, 10-5-5, 0)
	wantBalance(t, e, b1, 10+5+9, 0)
	wantBalance(t, e, c0, 10-3-1, 0)
	wantBalance(t, e, a1, 10+1+3+1, 0)
	wantBalanced(t, e)
}

// crossShardPair opens an engine of two shards on dir with an account on
// each, the first holding 100 from @world.
func crossShardPair(t *testing.T, dir string) (e *Ledger, a, b string) {
	t.Helper()
	e = openEngine(t, opts{Dir: dir, Shards: 2})
	a, b = namesOn(e, 0, 1, "payer")[0], namesOn(e, 1, 1, "payee")[0]
	mustOpenAccount(t, e, a, 0)
	mustOpenAccount(t, e, b, 0)
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: a, Amount: 100})
	return e, a, b
}

// With its queue full, a shard turns requests away at once.
func TestOverloaded(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 1, QueueCapacity: 2})
	mustOpenAccount(t, e, "a", 0)
	mustOpenAccount(t, e, "b", 0)
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "a", Amount: 100})
	release := parkEngine(t, e)

	var queued []*engine.Call
	var cmds []*Transfer
	for i := range 2 {
		cmd := &Transfer{Req: ledger.TransferRequest{ID: fmt.Sprint("q", i), From: "a", To: "b", Amount: 1}}
		c, err := e.port.Submit(ctx, 0, cmd)
		if err != nil {
			t.Fatalf("queueing %d of 2: %v", i, err)
		}
		queued, cmds = append(queued, c), append(cmds, cmd)
	}
	// A deadline only turns a hang into a failure; the answers must not
	// depend on it.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, _, err := e.Transfer(cctx, ledger.TransferRequest{ID: "q2", From: "a", To: "b", Amount: 1})
	wantCode(t, err, ledger.CodeOverloaded)
	_, _, err = e.CreateAccount(cctx, ledger.AccountSpec{ID: "c", Currency: "USD"})
	wantCode(t, err, ledger.CodeOverloaded)
	res, err := e.TransferBatch(cctx, []ledger.TransferRequest{{ID: "q3", From: "a", To: "b", Amount: 1}, {ID: "q4", From: "b", To: "a", Amount: 1}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if ledger.CodeOf(r.Err) != ledger.CodeOverloaded || r.Transfer.ID == "" {
			t.Fatalf("batch item %d: %+v", i, r)
		}
	}
	res, err = e.TransferBatch(cctx, []ledger.TransferRequest{{ID: "q5", From: "a", To: "b", Amount: 1}}, true)
	if err != nil || ledger.CodeOf(res[0].Err) != ledger.CodeOverloaded {
		t.Fatalf("atomic batch on a full shard: %+v %v", res, err)
	}
	if n := e.eng.QueueLen(0); n != 2 {
		t.Fatalf("queue holds %d commands, want the 2 accepted", n)
	}

	release()
	for i, c := range queued {
		if err := c.Wait(cctx); err != nil || cmds[i].Err != nil {
			t.Fatalf("queued transfer %d: %v %v", i, err, cmds[i].Err)
		}
	}
	// Load gone: requests are served again, and the rejected ones never ran.
	mustTransfer(t, e, ledger.TransferRequest{ID: "q2", From: "a", To: "b", Amount: 1})
	for _, id := range []string{"q3", "q4", "q5"} {
		_, err := e.GetTransfer(ctx, id)
		wantCode(t, err, ledger.CodeTransferNotFound)
	}
	wantBalance(t, e, "a", 97, 0)
	wantBalanced(t, e)
}

// When a non-atomic batch spans shards and a later shard is overloaded,
// the items already handed to an earlier shard still run; their results
// must say what happened to them, not report an empty success.
func TestBatchOverloadMidwayReportsAppliedItems(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2, QueueCapacity: 1})
	x := namesOn(e, 0, 2, "x")
	y := namesOn(e, 1, 1, "y")[0]
	for _, id := range append(x, y) {
		mustOpenAccount(t, e, id, 0)
		mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: id, Amount: 100})
	}
	release := parkEngine(t, e)
	filler, err := e.port.Submit(ctx, 1, &Transfer{Req: ledger.TransferRequest{From: y, To: x[0], Amount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []ledger.TransferRequest{
		{ID: "applied", From: x[0], To: x[1], Amount: 5},    // shard 0: runs
		{ID: "rejected", From: y, To: x[0], Amount: 1},      // shard 1: full
		{ID: "too-much", From: x[0], To: x[1], Amount: 1e6}, // shard 0: runs, fails
	}
	// TransferBatch, in two steps: queueing happens while the engine is
	// parked, so shard 1 is still full.
	queued := e.queueBatch(ctx, e.groupByShard(reqs), false)
	release()
	res, err := queued.results(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if err := filler.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, res[1].Err, ledger.CodeOverloaded)
	if tr, err := e.GetTransfer(ctx, "applied"); err != nil || tr.State != ledger.StatePosted {
		t.Fatalf("item 0 was not applied: %+v %v", tr, err)
	}
	if res[0].Err != nil || res[0].Transfer.ID != "applied" || res[0].Transfer.State != ledger.StatePosted {
		t.Errorf("item 0, applied, reported as %+v", res[0])
	}
	if ledger.CodeOf(res[2].Err) != ledger.CodeInsufficientFunds {
		t.Errorf("item 2, refused for insufficient funds, reported as %+v", res[2])
	}
}

// A hold with a timeout created by an atomic batch spanning shards must
// expire like any other.
func TestHoldFromCrossShardAtomicBatchExpires(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
	a0, a1 := namesOn(e, 0, 1, "a")[0], namesOn(e, 1, 1, "b")[0]
	for _, id := range []string{a0, a1} {
		mustOpenAccount(t, e, id, 0)
		mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: id, Amount: 100})
	}
	res, err := e.TransferBatch(ctx, []ledger.TransferRequest{
		{ID: "plain", From: a0, To: a1, Amount: 10},
		{ID: "held", From: a1, To: a0, Amount: 30, Pending: true, Timeout: 50 * time.Millisecond},
	}, true)
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("atomic batch: %+v %v", res, err)
	}
	wantBalance(t, e, a1, 110, 30)
	waitFor(t, "expiry of a hold made by a cross-shard atomic batch", func() bool {
		tr, err := e.GetTransfer(ctx, "held")
		return err == nil && tr.State == ledger.StateExpired
	})
	wantBalance(t, e, a1, 110, 0)
}

func TestReopenWithOtherShardCount(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, opts{Dir: dir, Shards: 4})
	var ids []string
	for i := range 20 {
		id := fmt.Sprint("r", i)
		ids = append(ids, id)
		mustOpenAccount(t, e, id, 0)
		mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: id, Amount: 50})
	}
	for i := range 40 {
		mustTransfer(t, e, ledger.TransferRequest{ID: fmt.Sprint("m", i), From: ids[i%20], To: ids[(i*7+3)%20], Amount: 5})
	}
	mustTransfer(t, e, ledger.TransferRequest{ID: "hold", From: ids[0], To: ids[1], Amount: 5, Pending: true})
	before := map[string]ledger.Account{}
	for _, id := range ids {
		before[id] = balance(t, e, id)
	}
	closeEngine(t, e)
	for _, n := range []int{3, 1} {
		e = openEngine(t, opts{Dir: dir, Shards: n})
		for _, id := range ids {
			if got := balance(t, e, id); got.Balance != before[id].Balance || got.Pending != before[id].Pending || got.Entries != before[id].Entries {
				t.Fatalf("%d shards: %s = %+v, was %+v", n, id, got, before[id])
			}
		}
		wantBalanced(t, e)
		_, _, err := e.Transfer(ctx, ledger.TransferRequest{ID: "m1", From: ids[0], To: ids[2], Amount: 1})
		wantCode(t, err, ledger.CodeIdempotencyConflict)
		closeEngine(t, e)
	}
	e = openEngine(t, opts{Dir: dir, Shards: 2})
	if tr, err := e.PostPending(ctx, "hold", 0); err != nil || tr.State != ledger.StatePosted {
		t.Fatalf("post after resharding: %+v %v", tr, err)
	}
	wantBalanced(t, e)
}

func TestHistoryPaging(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
	mustOpenAccount(t, e, "h", 0)
	for i := range 25 {
		mustTransfer(t, e, ledger.TransferRequest{ID: fmt.Sprint("h", i), From: ledger.WorldID, To: "h", Amount: int64(i + 1)})
	}
	seqsOf := func(p ledger.HistoryPage) []uint64 {
		var out []uint64
		for _, en := range p.Entries {
			out = append(out, en.Seq)
		}
		return out
	}
	for _, c := range []struct {
		q      ledger.HistoryQuery
		first  uint64
		n      int
		cursor uint64
	}{
		{ledger.HistoryQuery{}, 25, 25, 0},
		{ledger.HistoryQuery{Limit: 10}, 25, 10, 16},
		{ledger.HistoryQuery{Limit: 10, Cursor: 16}, 15, 10, 6},
		{ledger.HistoryQuery{Limit: 10, Cursor: 6}, 5, 5, 0},
		{ledger.HistoryQuery{Limit: 5, Cursor: 6}, 5, 5, 0},
		{ledger.HistoryQuery{Limit: 10, Offset: 3}, 22, 10, 13},
		{ledger.HistoryQuery{Limit: 10, Offset: 24}, 1, 1, 0},
		{ledger.HistoryQuery{Limit: 10, Offset: 25}, 0, 0, 0},
		{ledger.HistoryQuery{Limit: 10, Offset: 1000}, 0, 0, 0},
		{ledger.HistoryQuery{Limit: 3, Cursor: 1000, Offset: 20}, 25, 3, 23},
		{ledger.HistoryQuery{Limit: 3, Cursor: 1}, 0, 0, 0},
		{ledger.HistoryQuery{Limit: 100000}, 25, 25, 0},
	} {
		p, err := e.History(ctx, "h", c.q)
		if err != nil {
			t.Fatal(err)
		}
		got := seqsOf(p)
		if len(got) != c.n || (c.n > 0 && got[0] != c.first) || p.NextCursor != c.cursor {
			t.Fatalf("History(%+v) = seqs %v next %d; want %d from %d, next %d", c.q, got, p.NextCursor, c.n, c.first, c.cursor)
		}
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1]-1 {
				t.Fatalf("History(%+v) not contiguous: %v", c.q, got)
			}
		}
	}
	p, _ := e.History(ctx, "h", ledger.HistoryQuery{Limit: 1})
	want := ledger.Entry{Seq: 25, TransferID: "h24", Direction: ledger.Credit, Amount: 25, BalanceAfter: 25 * 26 / 2, Counterpart: ledger.WorldID}
	got := p.Entries[0]
	got.At = time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("newest entry %+v, want %+v", got, want)
	}
	if len(fullHistory(t, e, ledger.WorldID, 7)) != 25 {
		t.Fatalf("@world history")
	}
	if !slices.Equal(seqsOf(p), []uint64{25}) || p.NextCursor != 25 {
		t.Fatalf("limit 1: %v next %d", seqsOf(p), p.NextCursor)
	}
}

// Stats promises a consistent cut: per currency, balances sum to 0 at every
// moment, so the accounts of every shard a round touched must become
// visible together. The test holds the id filter's lock, which every
// publish takes after updating the committed view, so the round stops
// right after that; Stats then runs in that gap.
func TestStatsConsistentDuringCrossShardAtomicBatch(t *testing.T) {
	e := openEngine(t, opts{Dir: t.TempDir(), Shards: 2})
	a, b := namesOn(e, 0, 1, "a")[0], namesOn(e, 1, 1, "b")[0]
	mustOpenAccount(t, e, a, 0)
	mustOpenAccount(t, e, b, 0)
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: a, Amount: 100})
	wantBalanced(t, e)

	e.ids.mu.Lock()
	unlock := sync.OnceFunc(e.ids.mu.Unlock)
	defer unlock()
	type outcome struct {
		res []ledger.BatchResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		// Server-chosen ids: no idempotency lookup needs the filter.
		res, err := e.TransferBatch(ctx, []ledger.TransferRequest{
			{From: a, To: b, Amount: 40},
			{From: b, To: a, Amount: 1},
		}, true)
		done <- outcome{res, err}
	}()
	// Wait until one side of the batch is visible; the lock keeps the
	// other side from following. The deadline only guards against a
	// changed publish order that never reaches this point.
	var sum int64
	reached := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if balance(t, e, a).Balance == 61 || balance(t, e, b).Balance == 39 {
			st, err := e.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sum, reached = st.BalanceSum["USD"], true
			break
		}
		runtime.Gosched()
	}
	unlock()
	o := <-done
	if o.err != nil || o.res[0].Err != nil || o.res[1].Err != nil {
		t.Fatalf("atomic batch: %+v %v", o.res, o.err)
	}
	wantBalance(t, e, a, 61, 0)
	wantBalance(t, e, b, 39, 0)
	wantBalanced(t, e)
	if !reached {
		t.Logf("the batch never stopped between two publishes; nothing to check")
		return
	}
	if sum != 0 {
		t.Errorf("Stats during a cross-shard atomic batch: balances sum to %d", sum)
	}
}

// TestTransferAttachedOnlyWithNewTransfers: attached records are written
// with the transfer that a call makes anew, across shards too, and survive
// a restart; a replay, a conflict or a refusal writes none.
func TestTransferAttachedOnlyWithNewTransfers(t *testing.T) {
	dir := t.TempDir()
	e, a, b := crossShardPair(t, dir)
	marked := func(id string, req ledger.TransferRequest) error {
		attached := []store.Record{{Key: []byte("mark/" + id), Value: []byte("value of " + id)}, {Key: []byte("mark2/" + id)}}
		_, _, err := e.TransferWith(ctx, req, attached)
		return err
	}
	move := ledger.TransferRequest{ID: "move", From: a, To: b, Amount: 60}
	if err := marked("new", move); err != nil {
		t.Fatal(err)
	}
	if err := marked("replay", move); err != nil {
		t.Fatal(err)
	}
	conflict := move
	conflict.Amount = 1
	if err := marked("conflict", conflict); ledger.CodeOf(err) == "" {
		t.Fatalf("conflicting replay: %v, want a ledger refusal", err)
	}
	overdraft := ledger.TransferRequest{ID: "overdraft", From: a, To: b, Amount: 41}
	if err := marked("refused", overdraft); ledger.CodeOf(err) != ledger.CodeInsufficientFunds {
		t.Fatalf("overdraft: %v, want %s", err, ledger.CodeInsufficientFunds)
	}
	closeEngine(t, e)

	e = openEngine(t, opts{Dir: dir, Shards: 2})
	for id, want := range map[string]bool{"new": true, "replay": false, "conflict": false, "refused": false} {
		v, found, err := e.db.Get([]byte("mark/" + id))
		if err != nil || found != want || found && string(v) != "value of "+id {
			t.Errorf("record of the %s call: found %v %q (%v), want %v", id, found, v, err, want)
		}
		if _, found, err := e.db.Get([]byte("mark2/" + id)); err != nil || found != want {
			t.Errorf("second record of the %s call: found %v (%v), want %v", id, found, err, want)
		}
	}
}
