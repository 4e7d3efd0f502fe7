package e2e

import (
	"sync"
	"testing"
)

// Shape of the concurrent load of the conservation and crash tests.
const (
	loadAccounts = 200
	loadWorkers  = 32
	loadShards   = "4"
)

// TestConservationUnderConcurrency runs 5,000 random transfers from 32
// goroutines over 200 accounts on 4 shards, then checks that no money was
// made or lost and that every account agrees with its history.
func TestConservationUnderConcurrency(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	srv := start(t, t.TempDir(), "--shards", loadShards)
	c := srv.c
	fx := openFunded(t, c, "cc", loadAccounts, 1000)
	l := &load{c: c, accounts: fx.accounts, workers: loadWorkers, requests: 5000, maxAmount: 200, prefix: "cc", seed: rng.Uint64()}

	stopWatch := watchStats(t, c)
	res := l.run()
	samples := stopWatch()
	t.Logf("%d acknowledged, %d refused, %d without answer; %d stats samples during the load",
		len(res.acked), len(res.rejected), len(res.unknown), samples)
	for _, u := range res.unexpected {
		t.Errorf("answer outside the contract: %s", u)
	}
	if len(res.unknown) > 0 {
		t.Errorf("%d requests got no answer from a running server, e.g. %+v", len(res.unknown), res.unknown[0])
	}
	if len(res.acked) < l.requests/2 {
		t.Errorf("only %d of %d transfers acknowledged; the load should mostly succeed", len(res.acked), l.requests)
	}

	wantConserved(t, c)
	v := readLedger(t, c, fx.allIDs())
	v.wantConsistent(t)
	idx := v.index()
	known := map[string]bool{}
	for _, req := range append(fx.funding, res.acked...) {
		wantPresent(t, idx, req)
		known[req.ID] = true
	}
	for _, req := range res.rejected {
		wantAbsent(t, idx, req)
	}
	wantNoPhantoms(t, idx, known)
	wantStored(t, c, res.acked)
	wantNotStored(t, c, res.rejected)
}

// watchStats samples /v1/ledger/stats until the returned stop function is
// called, which returns the number of samples. Every sample must show the
// documented invariant: the balances sum to minus the in-flight amount
// (so to 0 when nothing is in flight).
func watchStats(t *testing.T, c *Client) (stop func() int) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	samples := 0
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			s, r, err := c.Stats()
			if err != nil || r.Status != 200 {
				t.Errorf("stats during load: %v %v", r, err)
				return
			}
			samples++
			if sum, fly := s.BalanceSum[currency], s.InFlightAmount[currency]; sum+fly != 0 || (s.InFlight == 0 && sum != 0) {
				t.Errorf("stats during load broke conservation: %+v", s)
				return
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return samples
	}
}
