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

// TestConservationUnderConcurrency runs 5,000 random requests (single
// transfers, and one in ten an atomic batch of three) from 32 goroutines
// over 200 accounts on 4 shards, sampling the ledger totals meanwhile, then
// checks that no money was
// made or lost and that every account agrees with its history.
func TestConservationUnderConcurrency(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	srv := start(t, t.TempDir(), "--shards", loadShards)
	c := srv.c
	fx := openFunded(t, c, "cc", loadAccounts, 1000)
	l := &load{c: c, accounts: fx.accounts, workers: loadWorkers, requests: 5000, maxAmount: 200, batchEvery: 10, prefix: "cc", seed: rng.Uint64()}

	var stopWatch func() statsWatch
	l.onAck, stopWatch = watchStats(t, c)
	res := l.run()
	stopWatch().report(t)
	t.Logf("%d acknowledged, %d refused, %d without answer", len(res.acked), len(res.rejected), len(res.unknown))
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
	v.wantHeld(t, nil)
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

// statsWatch is what watchStats saw.
type statsWatch struct {
	samples int
	// unbalanced counts samples whose balance_sum is not 0, against "every
	// answer is a consistent cut in which balance_sum is 0" (docs/API.md).
	unbalanced int
	// firstUnbalanced is the first faulty sample.
	firstUnbalanced Stats
}

// statsEvery is how many acknowledged transfers separate two stats
// samples during the load.
const statsEvery = 20

// watchStats samples /v1/ledger/stats during a load, once for every
// statsEvery acknowledged transfers (a sample is skipped if the previous
// one is still running). It returns the load's onAck hook and a stop
// function that returns what it saw.
func watchStats(t *testing.T, c *Client) (onAck func(int64), stop func() statsWatch) {
	done := make(chan struct{})
	kick := make(chan struct{})
	var (
		wg sync.WaitGroup
		w  statsWatch
	)
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-kick:
			}
			s, r, err := c.Stats()
			if !want(t, r, err, 200, "") {
				return
			}
			w.add(s)
		}
	})
	onAck = func(n int64) {
		if n%statsEvery == 0 {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	return onAck, func() statsWatch {
		close(done)
		wg.Wait()
		return w
	}
}

// add records one sample.
func (w *statsWatch) add(s Stats) {
	w.samples++
	if s.BalanceSum[currency] != 0 {
		if w.unbalanced++; w.unbalanced == 1 {
			w.firstUnbalanced = s
		}
	}
}

// report fails the test for faulty samples.
func (w statsWatch) report(t *testing.T) {
	t.Helper()
	t.Logf("%d stats samples during the load", w.samples)
	if w.unbalanced > 0 {
		t.Errorf("%d of %d stats samples had balance_sum != 0 (a snapshot that is not consistent); first: %+v", w.unbalanced, w.samples, w.firstUnbalanced)
	}
}
