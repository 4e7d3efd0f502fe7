package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
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
	acked    []TransferReq   // acknowledged: must exist
	rejected []TransferReq   // refused: must not exist
	unknown  [][]TransferReq // requests in flight at a kill: each all or nothing
}

// TestCrashRecovery runs concurrent load (single transfers and atomic
// batches) on 4 shards and kills the server with SIGKILL at a random point
// of it, five times, restarting on the same data each time. Every acknowledged transfer must survive, nothing refused
// may appear, requests in flight at a kill must be whole or absent, money
// must be conserved, and retrying an in-flight request must never
// duplicate it.
func TestCrashRecovery(t *testing.T) { testCrashRecovery(t) }

// TestCrashRecoveryShortSweeps is TestCrashRecovery with sweeps short
// enough that the ledger checkpoints its transfer-id filter and trims its
// history journal many times a round: each restart recovers the ids from
// the checkpoint and the journal after it, and must still know them all.
func TestCrashRecoveryShortSweeps(t *testing.T) { testCrashRecovery(t, "--sweep-entries", "64") }

func testCrashRecovery(t *testing.T, args ...string) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	args = append([]string{"--shards", loadShards}, args...)
	srv := start(t, dir, args...)
	fx := openFunded(t, srv.c, "cr", loadAccounts, 1_000_000)
	all := outcomes{acked: fx.funding}

	for round := range crashRounds {
		killAt := int64(crashMinAcks + rng.IntN(crashMaxAcks-crashMinAcks+1))
		l := &load{c: srv.c, accounts: fx.accounts, workers: loadWorkers, requests: roundRequestLimit,
			maxAmount: 100, batchEvery: 10, prefix: "cr" + strconv.Itoa(round), seed: rng.Uint64()}
		res := loadUntilKill(t, srv, l, killAt)
		t.Logf("round %d: killed after %d acks: %d acknowledged, %d refused, %d in flight",
			round, killAt, len(res.acked), len(res.rejected), len(res.unknown))
		for _, u := range res.unexpected {
			t.Errorf("answer outside the contract: %s", u)
		}

		srv = start(t, dir, args...)
		// Accounts come from their tail records, whose marks every batch
		// wrote up to the kill: what follows checks them.
		if !strings.Contains(srv.out.String(), "from_tail_records=true") {
			t.Errorf("restart %d did not load accounts from their tail records", round+1)
		}
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
	var res loadResult
	untilKill(t, srv, killAt, func(onAck func(int64)) {
		l.onAck = onAck
		res = l.run()
	})
	return res
}

// untilKill runs work, which must call onAck with the running number of
// acknowledged operations, and kills srv with SIGKILL as soon as that
// reaches killAt, while work goes on. It returns once work has returned.
func untilKill(t *testing.T, srv *server, killAt int64, work func(onAck func(int64))) {
	t.Helper()
	trigger := make(chan struct{})
	var once sync.Once
	onAck := func(n int64) {
		if n >= killAt {
			once.Do(func() { close(trigger) })
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(onAck)
	}()
	select {
	case <-trigger:
	case <-done:
		srv.kill()
		t.Fatalf("the work ended before %d operations were acknowledged; nothing to kill", killAt)
	}
	srv.kill()
	<-done
}

// splitAlternate splits items into those at even and at odd positions.
func splitAlternate[T any](items []T) (even, odd []T) {
	for i, r := range items {
		if i%2 == 0 {
			even = append(even, r)
		} else {
			odd = append(odd, r)
		}
	}
	return even, odd
}

// retryInFlight re-sends requests that were in flight at a kill, with the
// same ids and bodies. A request that happened must be replayed (200, the
// same transfers); one that did not must now be applied (201, or 200 with
// every item 201 for a batch) or refused for lack of funds. It returns the
// transfers now known to exist and those refused.
func retryInFlight(t *testing.T, c *Client, groups [][]TransferReq) (acked, rejected []TransferReq) {
	t.Helper()
	for _, group := range groups {
		existed, ok := groupExists(t, c, group)
		if !ok {
			continue
		}
		r, err := send(c, group)
		if err != nil {
			t.Errorf("retry of %s: %v", group[0].ID, err)
			continue
		}
		if existed {
			wantReplayed(t, group, r)
			acked = append(acked, group...)
			continue
		}
		var res loadResult
		if classify(&res, group, r) {
			acked = append(acked, group...)
		} else {
			rejected = append(rejected, group...)
		}
		for _, u := range res.unexpected {
			t.Errorf("retry of an in-flight request: %s", u)
		}
	}
	return acked, rejected
}

// groupExists reports, via GET /v1/transfers/{id}, whether the transfers
// of one request exist; ok is false (and the test failed) if only some do
// or a read fails.
func groupExists(t *testing.T, c *Client, group []TransferReq) (exists, ok bool) {
	t.Helper()
	found := 0
	for _, req := range group {
		_, r, err := c.GetTransfer(req.ID)
		if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusNotFound) {
			t.Errorf("GET in-flight transfer %s: %v %v", req.ID, r, err)
			return false, false
		}
		if r.Status == http.StatusOK {
			found++
		}
	}
	if found != 0 && found != len(group) {
		t.Errorf("only %d of the %d transfers of one request exist: %+v", found, len(group), group)
		return false, false
	}
	return found > 0, true
}

// wantReplayed checks the answer to a request that had already happened:
// 200 and the same transfers (for a batch, 200 for every item).
func wantReplayed(t *testing.T, group []TransferReq, r *Response) {
	t.Helper()
	if !wantStatus(t, r, nil, http.StatusOK) {
		return
	}
	if len(group) > 1 {
		var reply BatchReply
		if err := json.Unmarshal(r.Body, &reply); err != nil || len(reply.Results) != len(group) {
			t.Errorf("replayed batch: %s", r)
			return
		}
		for _, it := range reply.Results {
			if it.Status != http.StatusOK {
				t.Errorf("replayed batch item %+v, want 200", it)
			}
		}
		return
	}
	var got Transfer
	req := group[0]
	if err := json.Unmarshal(r.Body, &got); err != nil || got.ID != req.ID || got.From != req.From || got.To != req.To || got.Amount != req.Amount {
		t.Errorf("retry of %s replayed another transfer: %s", req.ID, r)
	}
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
	v.wantHeld(t, nil)
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
	for _, group := range all.unknown {
		for _, req := range group {
			known[req.ID] = true
		}
		if wantWholeOrAbsent(t, c, idx, group) {
			present++
		}
	}
	t.Logf("%d transfers acknowledged, %d refused; of %d requests left in flight, %d happened", len(all.acked), len(all.rejected), len(all.unknown), present)
	wantNoPhantoms(t, idx, known)
}

// wantWholeOrAbsent checks that a request in flight at a kill either
// happened whole (each of its transfers stored, and once on each side) or
// not at all, and reports whether it happened.
func wantWholeOrAbsent(t *testing.T, c *Client, idx map[string]*legs, group []TransferReq) bool {
	t.Helper()
	found := 0
	for _, req := range group {
		if idx[req.ID] != nil {
			found++
		}
	}
	if found == 0 {
		wantNotStored(t, c, group)
		return false
	}
	for _, req := range group {
		wantPresent(t, idx, req)
	}
	wantStored(t, c, group)
	return true
}
