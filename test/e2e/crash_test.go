package e2e

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// Shape of the crash test: rounds of load each ended by kill -9 after a
// random number of acknowledged transfers.
const (
	crashRounds       = 5
	crashMinAcks      = 200
	crashMaxAcks      = 1500
	roundRequestLimit = 50000
)

// outcomes accumulates, over all rounds, what is known of each transfer.
type outcomes struct {
	acked    []TransferReq // acknowledged: must exist
	rejected []TransferReq // refused: must not exist
	unknown  []TransferReq // in flight at a kill: all or nothing
}

// TestCrashRecovery runs concurrent load on 4 shards and kills the server
// with SIGKILL at a random point of it, five times, restarting on the same
// data each time. Every acknowledged transfer must survive, nothing refused
// may appear, transfers in flight at a kill must be whole or absent, money
// must be conserved, and retrying an in-flight request must never
// duplicate it.
func TestCrashRecovery(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	srv := start(t, dir, "--shards", loadShards)
	fx := openFunded(t, srv.c, "cr", loadAccounts, 1_000_000)
	all := outcomes{acked: fx.funding}

	for round := range crashRounds {
		killAt := int64(crashMinAcks + rng.IntN(crashMaxAcks-crashMinAcks+1))
		l := &load{c: srv.c, accounts: fx.accounts, workers: loadWorkers, requests: roundRequestLimit,
			maxAmount: 100, prefix: "cr" + strconv.Itoa(round), seed: rng.Uint64()}
		res := loadUntilKill(t, srv, l, killAt)
		t.Logf("round %d: killed after %d acks: %d acknowledged, %d refused, %d in flight",
			round, killAt, len(res.acked), len(res.rejected), len(res.unknown))
		for _, u := range res.unexpected {
			t.Errorf("answer outside the contract: %s", u)
		}

		srv = start(t, dir, "--shards", loadShards)
		wantConserved(t, srv.c)
		wantStored(t, srv.c, res.acked)
		wantNotStored(t, srv.c, res.rejected)
		retry, keep := splitAlternate(res.unknown)
		acked, rejected := retryInFlight(t, srv.c, retry)
		all.acked = append(append(all.acked, res.acked...), acked...)
		all.rejected = append(append(all.rejected, res.rejected...), rejected...)
		all.unknown = append(all.unknown, keep...)
		if t.Failed() {
			t.FailNow()
		}
	}
	wantCrashOutcomes(t, srv.c, fx, all)
}

// loadUntilKill runs l against srv and kills the server with SIGKILL as
// soon as killAt transfers have been acknowledged, while the load goes on.
// It returns once every worker has stopped.
func loadUntilKill(t *testing.T, srv *server, l *load, killAt int64) loadResult {
	t.Helper()
	trigger := make(chan struct{})
	var once sync.Once
	l.onAck = func(n int64) {
		if n >= killAt {
			once.Do(func() { close(trigger) })
		}
	}
	done := make(chan loadResult, 1)
	go func() { done <- l.run() }()
	select {
	case <-trigger:
	case res := <-done:
		srv.kill()
		t.Fatalf("load ended with %d of %d acknowledged before the kill point", len(res.acked), killAt)
	}
	srv.kill()
	return <-done
}

// splitAlternate splits reqs into those at even and at odd positions.
func splitAlternate(reqs []TransferReq) (even, odd []TransferReq) {
	for i, r := range reqs {
		if i%2 == 0 {
			even = append(even, r)
		} else {
			odd = append(odd, r)
		}
	}
	return even, odd
}

// retryInFlight re-sends requests that were in flight at a kill, with the
// same id and body. One that exists must be replayed (200, same transfer);
// one that does not must now be created (201), or refused for lack of
// funds. It returns the requests now known to exist and those refused.
func retryInFlight(t *testing.T, c *Client, reqs []TransferReq) (acked, rejected []TransferReq) {
	t.Helper()
	for _, req := range reqs {
		_, r, err := c.GetTransfer(req.ID)
		if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusNotFound) {
			t.Errorf("GET in-flight transfer %s: %v %v", req.ID, r, err)
			continue
		}
		existed := r.Status == http.StatusOK
		got, r, err := c.Transfer(req)
		switch {
		case err != nil:
			t.Errorf("retry of %s: %v", req.ID, err)
		case existed && want(t, r, nil, http.StatusOK, ""):
			if got.From != req.From || got.To != req.To || got.Amount != req.Amount {
				t.Errorf("retry of %s replayed another transfer: %+v", req.ID, got)
			}
			acked = append(acked, req)
		case existed:
		case r.Status == http.StatusCreated:
			acked = append(acked, req)
		case want(t, r, nil, http.StatusUnprocessableEntity, "insufficient_funds"):
			rejected = append(rejected, req)
		}
	}
	return acked, rejected
}

// wantCrashOutcomes checks the ledger after all the crashes against what
// the clients know.
func wantCrashOutcomes(t *testing.T, c *Client, fx ledgerFixture, all outcomes) {
	t.Helper()
	wantConserved(t, c)
	wantStored(t, c, all.acked)
	wantNotStored(t, c, all.rejected)
	v := readLedger(t, c, fx.allIDs())
	v.wantConsistent(t)
	idx := v.index()
	known := map[string]bool{}
	for _, req := range all.acked {
		wantPresent(t, idx, req)
		known[req.ID] = true
	}
	for _, req := range all.rejected {
		wantAbsent(t, idx, req)
	}
	present := 0
	for _, req := range all.unknown {
		known[req.ID] = true
		if wantWholeOrAbsent(t, c, idx, req) {
			present++
		}
	}
	t.Logf("%d acknowledged, %d refused; of %d left in flight, %d happened", len(all.acked), len(all.rejected), len(all.unknown), present)
	wantNoPhantoms(t, idx, known)
}

// wantWholeOrAbsent checks that a transfer in flight at a kill either
// exists whole (stored, and once on each side) or not at all, and reports
// whether it exists.
func wantWholeOrAbsent(t *testing.T, c *Client, idx map[string]*legs, req TransferReq) bool {
	t.Helper()
	if idx[req.ID] == nil {
		wantNotStored(t, c, []TransferReq{req})
		return false
	}
	wantPresent(t, idx, req)
	wantStored(t, c, []TransferReq{req})
	return true
}
