package ledgerengine

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
)

// tpcbUnit is one TPC-B transaction as `surge bench tpcb` sends it: an
// atomic batch moving delta between @world and an account, a teller and a
// branch. A doomed unit has one leg debit an account that cannot pay, so
// the whole unit must fail.
type tpcbUnit struct {
	reqs   []ledger.TransferRequest
	delta  int64
	legs   [3]string
	doomed bool
}

// tpcbFixture is a ledger of TPC-B accounts, tellers and branches spread
// over the shards, plus accounts that can pay nothing.
type tpcbFixture struct {
	accounts, tellers, branches, poor []string
}

func newTPCBFixture(t *testing.T, e *Ledger) tpcbFixture {
	t.Helper()
	f := tpcbFixture{}
	for i := range 24 {
		f.accounts = append(f.accounts, fmt.Sprintf("acct%d", i))
	}
	for i := range 6 {
		f.tellers = append(f.tellers, fmt.Sprintf("teller%d", i))
	}
	f.branches = []string{"branch0", "branch1", "branch2"}
	for _, group := range [][]string{f.accounts, f.tellers, f.branches} {
		for _, id := range group {
			mustOpenAccount(t, e, id, 1<<40)
		}
	}
	for i := range e.eng.Shards() {
		id := namesOn(e, i, 1, "poor")[0]
		mustOpenAccount(t, e, id, 0)
		f.poor = append(f.poor, id)
	}
	return f
}

// unit draws unit k of worker w; about one in four is doomed.
func (f tpcbFixture) unit(r *rand.Rand, w, k int) tpcbUnit {
	u := tpcbUnit{delta: 1 + r.Int64N(50)}
	if r.IntN(2) == 0 {
		u.delta = -u.delta
	}
	u.legs = [3]string{f.accounts[r.IntN(len(f.accounts))], f.tellers[r.IntN(len(f.tellers))], f.branches[r.IntN(len(f.branches))]}
	doomedLeg := -1
	if r.IntN(4) == 0 {
		u.doomed, doomedLeg = true, r.IntN(3)
	}
	for i, leg := range u.legs {
		req := ledger.TransferRequest{ID: fmt.Sprintf("u%d-%d-%d", w, k, i), From: ledger.WorldID, To: leg, Amount: u.delta}
		if u.delta < 0 {
			req.From, req.To, req.Amount = leg, ledger.WorldID, -u.delta
		}
		if i == doomedLeg {
			req.From, req.To, req.Amount = f.poor[r.IntN(len(f.poor))], ledger.WorldID, 1+r.Int64N(50)
		}
		u.reqs = append(u.reqs, req)
	}
	return u
}

// verify checks one unit's reply: every leg applied, or, for a doomed
// unit, none: the leg that cannot pay blamed and the others aborted.
func (u tpcbUnit) verify(res []ledger.BatchResult) error {
	if len(res) != len(u.reqs) {
		return fmt.Errorf("unit %s: %d results for %d legs", u.reqs[0].ID, len(res), len(u.reqs))
	}
	blamed := 0
	for i, r := range res {
		switch code := ledger.CodeOf(r.Err); {
		case !u.doomed && r.Err != nil:
			return fmt.Errorf("leg %s of a unit that can pay: %v", u.reqs[i].ID, r.Err)
		case u.doomed && code == ledger.CodeInsufficientFunds:
			blamed++
		case u.doomed && code != ledger.CodeBatchAborted:
			return fmt.Errorf("leg %s of a doomed unit: %v, want insufficient_funds or batch_aborted", u.reqs[i].ID, r.Err)
		}
	}
	if u.doomed && blamed != 1 {
		return fmt.Errorf("doomed unit %s: %d legs blamed, want 1", u.reqs[0].ID, blamed)
	}
	return nil
}

// TestConcurrentTPCBUnitsAllOrNothing runs TPC-B units from many clients
// at once, so that units whose legs span shards share rounds with each
// other and with single-shard ones, a quarter of them with a leg that
// cannot pay. Every unit must be all or nothing: in its reply, in the
// transfers stored, in every balance, and after a restart; replays answer
// from the first run.
func TestConcurrentTPCBUnitsAllOrNothing(t *testing.T) {
	for _, parallel := range []int{0, 1} {
		t.Run(fmt.Sprintf("parallel=%d", parallel), func(t *testing.T) {
			dir := t.TempDir()
			e := openEngine(t, opts{Dir: dir, Shards: 3, parallel: parallel})
			f := newTPCBFixture(t, e)
			units := runTPCBUnits(t, e, f, 12, 40)
			want := expectedTPCBBalances(units)
			checkTPCBState(t, e, f, units, want)

			for _, u := range units[:20] { // replays change nothing
				res, err := e.TransferBatch(ctx, u.reqs, true)
				if err != nil {
					t.Fatal(err)
				}
				if err := u.verify(res); err != nil {
					t.Fatal(err)
				}
				for i, r := range res {
					if !u.doomed && !r.Replayed {
						t.Fatalf("replayed leg %s made anew", u.reqs[i].ID)
					}
				}
			}
			checkTPCBState(t, e, f, units, want)

			closeEngine(t, e)
			e = openEngine(t, opts{Dir: dir, Shards: 3, parallel: parallel})
			checkTPCBState(t, e, f, units, want)
		})
	}
}

// runTPCBUnits has workers clients send perWorker units each, at once,
// and checks each reply.
func runTPCBUnits(t *testing.T, e *Ledger, f tpcbFixture, workers, perWorker int) []tpcbUnit {
	t.Helper()
	units := make([][]tpcbUnit, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		r := rand.New(rand.NewPCG(uint64(w), 25))
		for k := range perWorker {
			units[w] = append(units[w], f.unit(r, w, k))
		}
		wg.Go(func() {
			for _, u := range units[w] {
				res, err := e.TransferBatch(ctx, u.reqs, true)
				if err != nil {
					errs <- err
					return
				}
				if err := u.verify(res); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	read := readWhileRunning(e, f, done)
	wg.Wait()
	close(done)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []tpcbUnit
	for _, us := range units {
		all = append(all, us...)
	}
	return all
}

// readWhileRunning reads accounts and the ledger's totals until done, as
// clients reading balances during the units would: rolled-back units must
// not show, and reading must not race with the shards (go test -race).
// It sends the first problem it sees, or nil, once done.
func readWhileRunning(e *Ledger, f tpcbFixture, done <-chan struct{}) <-chan error {
	out := make(chan error, 1)
	ids := append(append([]string{ledger.WorldID}, f.poor...), f.accounts...)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				out <- nil
				return
			default:
			}
			a, err := e.Account(ctx, ids[i%len(ids)])
			if err == nil && a.Currency != "USD" {
				err = fmt.Errorf("%s read as %+v", a.ID, a)
			}
			if err == nil && !ledger.IsSystem(a.ID) && a.OverdraftLimit == 0 && (a.Balance != 0 || a.Entries != 0) {
				err = fmt.Errorf("%s, which can pay nothing, read as %+v", a.ID, a)
			}
			if st, serr := e.Stats(ctx); err == nil && (serr != nil || st.BalanceSum["USD"] != 0) {
				err = fmt.Errorf("stats %+v, %v: money not conserved", st, serr)
			}
			if err != nil {
				out <- err
				return
			}
		}
	}()
	return out
}

// expectedTPCBBalances adds up the deltas of the units that can pay.
func expectedTPCBBalances(units []tpcbUnit) map[string]int64 {
	want := map[string]int64{}
	for _, u := range units {
		if u.doomed {
			continue
		}
		for _, leg := range u.legs {
			want[leg] += u.delta
		}
	}
	return want
}

// checkTPCBState checks every balance against the units applied, that no
// leg of a doomed unit and every leg of the others is stored, and that
// money is conserved.
func checkTPCBState(t *testing.T, e *Ledger, f tpcbFixture, units []tpcbUnit, want map[string]int64) {
	t.Helper()
	for _, group := range [][]string{f.accounts, f.tellers, f.branches} {
		for _, id := range group {
			if got := balance(t, e, id).Balance; got != want[id] {
				t.Fatalf("%s: balance %d, want %d", id, got, want[id])
			}
		}
	}
	for _, id := range f.poor {
		if a := balance(t, e, id); a.Balance != 0 || a.Entries != 0 {
			t.Fatalf("%s, which can pay nothing, changed: %+v", id, a)
		}
	}
	for _, u := range units {
		for _, req := range u.reqs {
			_, err := e.GetTransfer(ctx, req.ID)
			if u.doomed {
				wantCode(t, err, ledger.CodeTransferNotFound)
			} else if err != nil {
				t.Fatalf("leg %s of an applied unit: %v", req.ID, err)
			}
		}
	}
	wantBalanced(t, e)
}
