package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
)

// Shape of the two-phase crash test.
const (
	holdAccounts = 100
	holdCount    = 2000
	holdMinAcks  = 100
	holdMaxAcks  = 1000
)

// holdResult is what the client learnt of the post or void of a hold.
type holdResult int

// Hold results.
const (
	untouched holdResult = iota // never sent: the server died first
	settled                     // acknowledged (200)
	lapsed                      // refused as not pending: the hold had expired
	inFlight                    // sent, no answer: in flight at the kill
)

// String names a result for failure messages.
func (r holdResult) String() string {
	return [...]string{untouched: "untouched", settled: "settled", lapsed: "refused as expired", inFlight: "in flight"}[r]
}

// holdOp is one hold of TestCrashTwoPhase and what is done to it.
type holdOp struct {
	hold   TransferReq
	void   bool  // void it, else post it
	amount int64 // amount to post; 0 posts all
	result holdResult
}

// outcome is the state and posted amount the op gives its hold.
func (op *holdOp) outcome() (string, int64) {
	switch {
	case op.void:
		return "voided", 0
	case op.amount == 0:
		return "posted", op.hold.Amount
	default:
		return "posted", op.amount
	}
}

// TestCrashTwoPhase opens 2,000 holds between 100 accounts on 4 shards
// (a quarter with a timeout), then posts (fully or partly) or voids them
// from 32 goroutines and kills the server with SIGKILL after a random
// number of acknowledgements. After the restart every acknowledged post or
// void holds, holds in flight are pending or settled whole, pending
// amounts match the open holds, money is conserved and every posted hold is
// in both histories exactly once. Then every remaining hold is posted and
// nothing may stay held.
func TestCrashTwoPhase(t *testing.T) { testCrashTwoPhase(t) }

// TestCrashTwoPhaseShortSweeps is TestCrashTwoPhase with short sweeps: the
// holds are opened and settled across many checkpoints of the ledger's
// transfer-id filter and trims of its journal. A voided hold leaves no
// history entry: after the restart, only the checkpoint or the journal
// record of the batch that opened it can say its id is taken.
func TestCrashTwoPhaseShortSweeps(t *testing.T) { testCrashTwoPhase(t, "--sweep-entries", "64") }

func testCrashTwoPhase(t *testing.T, args ...string) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	args = append([]string{"--shards", loadShards}, args...)
	srv := start(t, dir, args...)
	fx := openFunded(t, srv.c, "tc", holdAccounts, 1_000_000)
	ops := openHolds(t, srv.c, rng, fx.accounts)
	killAt := int64(holdMinAcks + rng.IntN(holdMaxAcks-holdMinAcks+1))
	untilKill(t, srv, killAt, func(onAck func(int64)) {
		hammer(loadWorkers, len(ops), onAck, func(_, i int) (int, bool) { return settleHold(t, srv.c, ops[i]) })
	})
	logHoldResults(t, killAt, ops)

	srv = start(t, dir, args...)
	wantConserved(t, srv.c)
	states := readSettledHolds(t, srv.c, ops)
	for _, op := range ops {
		wantHoldState(t, op, states[op.hold.ID])
	}
	wantHoldLedger(t, srv.c, fx, ops, states)

	postOpenHolds(t, srv.c, ops, states)
	wantConserved(t, srv.c)
	v := readLedger(t, srv.c, fx.allIDs())
	v.wantConsistent(t)
	v.wantHeld(t, nil)
}

// openHolds opens holdCount pending transfers between random accounts and
// draws what to do to each.
func openHolds(t *testing.T, c *Client, rng *rand.Rand, accounts []string) []*holdOp {
	t.Helper()
	ops := make([]*holdOp, holdCount)
	for i := range ops {
		from, to := randomPair(rng, accounts)
		op := &holdOp{hold: TransferReq{ID: fmt.Sprintf("tc-h%d", i), From: from, To: to, Amount: 1 + rng.Int64N(1000), Pending: true}}
		if rng.IntN(4) == 0 {
			op.hold.TimeoutMS = 200 + rng.Int64N(1800)
		}
		switch rng.IntN(3) {
		case 0:
			op.void = true
		case 1:
			op.amount = 1 + rng.Int64N(op.hold.Amount)
		}
		ops[i] = op
	}
	parallel(16, len(ops), func(i int) {
		_, r, err := c.Transfer(ops[i].hold)
		want(t, r, err, http.StatusCreated, "")
	})
	if t.Failed() {
		t.FailNow()
	}
	return ops
}

// settleHold posts or voids one hold and records the answer; it stops its
// worker when there is none.
func settleHold(t *testing.T, c *Client, op *holdOp) (acks int, stop bool) {
	r, err := retryOverloaded(func() (*Response, error) {
		if op.void {
			_, r, err := c.Void(op.hold.ID)
			return r, err
		}
		_, r, err := c.Post(op.hold.ID, op.amount)
		return r, err
	})
	switch {
	case err != nil:
		op.result = inFlight
		return 0, true
	case r.Status == http.StatusOK:
		op.result = settled
		return 1, false
	case op.hold.TimeoutMS > 0 && r.Status == http.StatusConflict && r.Problem.Code == "transfer_not_pending":
		op.result = lapsed
	default:
		op.result = lapsed
		t.Errorf("settling hold %s: answer outside the contract: %s", op.hold.ID, r)
	}
	return 0, false
}

// logHoldResults logs how many holds ended in each result.
func logHoldResults(t *testing.T, killAt int64, ops []*holdOp) {
	n := map[holdResult]int{}
	for _, op := range ops {
		n[op.result]++
	}
	t.Logf("killed after %d acks: %d settled, %d had expired, %d in flight, %d untouched",
		killAt, n[settled], n[lapsed], n[inFlight], n[untouched])
}

// readSettledHolds reads every hold by id, again until no hold with a
// timeout is pending any more, so that the states read stay true while
// the test checks the accounts.
func readSettledHolds(t *testing.T, c *Client, ops []*holdOp) map[string]Transfer {
	t.Helper()
	var states map[string]Transfer
	poll(t, expiryTimeout, "every hold with a timeout to be over", func() (bool, string) {
		states = readHolds(t, c, ops)
		for _, op := range ops {
			if st := states[op.hold.ID]; op.hold.TimeoutMS > 0 && st.State == "pending" {
				return false, fmt.Sprintf("%+v", st)
			}
		}
		return true, ""
	})
	return states
}

// readHolds reads every hold by id.
func readHolds(t *testing.T, c *Client, ops []*holdOp) map[string]Transfer {
	t.Helper()
	states := map[string]Transfer{}
	var mu sync.Mutex
	parallel(8, len(ops), func(i int) {
		got, r, err := c.GetTransfer(ops[i].hold.ID)
		if !want(t, r, err, http.StatusOK, "") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		states[got.ID] = got
	})
	if t.Failed() {
		t.FailNow()
	}
	return states
}

// wantHoldState checks a hold's state after the restart against what the
// client learnt: an acknowledged post or void stands; a refused one found
// the hold expired; one in flight happened whole or not at all; an
// untouched hold is still pending, or expired if it had a timeout.
func wantHoldState(t *testing.T, op *holdOp, got Transfer) {
	t.Helper()
	state, posted := op.outcome()
	ok := false
	switch got.State {
	case state:
		ok = got.PostedAmount == posted && (op.result == settled || op.result == inFlight)
	case "pending":
		ok = got.PostedAmount == 0 && (op.result == untouched || op.result == inFlight)
	case "expired":
		ok = got.PostedAmount == 0 && op.hold.TimeoutMS > 0 && op.result != settled
	}
	if !ok {
		t.Errorf("hold %s (%+v, void=%v amount=%d, result %s) is %s with posted_amount %d after the restart",
			op.hold.ID, op.hold, op.void, op.amount, op.result, got.State, got.PostedAmount)
	}
}

// wantHoldLedger checks the accounts against the holds' states: balances
// match histories and sum to 0, pending amounts are the open holds, and
// each posted hold (only those) is in both histories with its posted
// amount.
func wantHoldLedger(t *testing.T, c *Client, fx ledgerFixture, ops []*holdOp, states map[string]Transfer) {
	t.Helper()
	v := readLedger(t, c, fx.allIDs())
	v.wantConsistent(t)
	held := map[string]int64{}
	idx := v.index()
	known := map[string]bool{}
	for _, req := range fx.funding {
		wantPresent(t, idx, req)
		known[req.ID] = true
	}
	for _, op := range ops {
		h, st := op.hold, states[op.hold.ID]
		known[h.ID] = true
		switch st.State {
		case "pending":
			held[h.From] += h.Amount
			wantAbsent(t, idx, h)
		case "posted":
			wantPresent(t, idx, TransferReq{ID: h.ID, From: h.From, To: h.To, Amount: st.PostedAmount})
		default:
			wantAbsent(t, idx, h)
		}
	}
	v.wantHeld(t, held)
	wantNoPhantoms(t, idx, known)
}

// postOpenHolds posts all that is held by every hold still pending; one
// with a timeout may have expired meanwhile.
func postOpenHolds(t *testing.T, c *Client, ops []*holdOp, states map[string]Transfer) {
	t.Helper()
	parallel(8, len(ops), func(i int) {
		h := ops[i].hold
		if states[h.ID].State != "pending" {
			return
		}
		_, r, err := c.Post(h.ID, 0)
		if err == nil && h.TimeoutMS > 0 && r.Status == http.StatusConflict {
			want(t, r, err, http.StatusConflict, "transfer_not_pending")
			return
		}
		want(t, r, err, http.StatusOK, "")
	})
}
