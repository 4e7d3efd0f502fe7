package e2e

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// TestRestartPersistence stops the server (cleanly with SIGTERM, or with
// kill -9) and restarts it on the same data: accounts, history, transfer
// ids, a pending hold and an expiry that fell while it was down must all
// come back as they should be.
func TestRestartPersistence(t *testing.T) {
	t.Run("sigterm", func(t *testing.T) { testPersistence(t, (*server).stop) })
	t.Run("kill9", func(t *testing.T) { testPersistence(t, (*server).kill) })
}

// persisted is what the first run of testPersistence leaves behind.
type persisted struct {
	spec     NewAccount
	transfer Transfer // rp-t1, single phase
	expiry   time.Time
	view     ledgerView
}

// persistedIDs are the accounts testPersistence uses.
var persistedIDs = []string{world, "rp-a", "rp-b"}

// testPersistence runs the scenario with halt as the way to stop.
func testPersistence(t *testing.T, halt func(*server)) {
	dir := t.TempDir()
	srv := start(t, dir, "--shards", "4")
	p := persistFixture(t, srv.c)
	halt(srv)
	if !time.Now().Before(p.expiry) {
		t.Logf("stopping took until after rp-exp's expiry: it may have expired before the stop, not while the server was down")
	}
	// The expiry under test must fall while the server is down: wait for
	// the wall clock to pass it.
	time.Sleep(time.Until(p.expiry) + time.Millisecond)

	srv = start(t, dir, "--shards", "4")
	c := srv.c
	waitState(t, c, "rp-exp", "expired")
	wantPersisted(t, c, p)

	posted, r, err := c.Post("rp-keep", 0)
	must(t, r, err, http.StatusOK, "")
	if posted.State != "posted" || posted.PostedAmount != 200 {
		t.Errorf("post after restart: %+v", posted)
	}
	wantBalance(t, c, "rp-a", 700, 0)
	halt(srv)

	srv = start(t, dir, "--shards", "4")
	wantBalance(t, srv.c, "rp-a", 700, 0)
	wantBalance(t, srv.c, "rp-b", 300, 0)
	if got := mustGetTransfer(t, srv.c, "rp-keep"); got.State != "posted" || got.PostedAmount != 200 {
		t.Errorf("rp-keep after a second restart: %+v", got)
	}
	wantConserved(t, srv.c)
}

// persistFixture makes two accounts, a funding, a transfer and a pending
// hold without timeout (rp-keep, 200), reads them, and last opens a hold
// that expires soon (rp-exp, 50), so that it is still pending at the stop.
func persistFixture(t *testing.T, c *Client) persisted {
	t.Helper()
	p := persisted{spec: NewAccount{ID: "rp-a", Currency: currency, OverdraftLimit: 5, Metadata: map[string]string{"k": "v"}}}
	mustCreateAccount(t, c, p.spec)
	openAccounts(t, c, "rp-b")
	mustTransfer(t, c, TransferReq{ID: "rp-fund", From: world, To: "rp-a", Amount: 1000})
	p.transfer = mustTransfer(t, c, TransferReq{ID: "rp-t1", From: "rp-a", To: "rp-b", Amount: 100, Memo: "kept"})
	hold(t, c, TransferReq{ID: "rp-keep", From: "rp-a", To: "rp-b", Amount: 200})
	p.view = readLedger(t, c, persistedIDs)
	exp := hold(t, c, TransferReq{ID: "rp-exp", From: "rp-a", To: "rp-b", Amount: 50, TimeoutMS: 1000})
	p.expiry = wantExpiresAt(t, exp)
	wantBalance(t, c, "rp-a", 900, 250)
	return p
}

// wantPersisted checks the restarted ledger against the first run: the
// same accounts and histories as read before rp-exp was opened (its hold
// has lapsed); replays answer 200; the remaining hold still limits
// spending.
func wantPersisted(t *testing.T, c *Client, p persisted) {
	t.Helper()
	now := readLedger(t, c, persistedIDs)
	for _, id := range persistedIDs {
		if !reflect.DeepEqual(now.accounts[id], p.view.accounts[id]) {
			t.Errorf("account %s after restart: %+v, want %+v", id, now.accounts[id], p.view.accounts[id])
		}
		if !reflect.DeepEqual(now.history[id], p.view.history[id]) {
			t.Errorf("history of %s after restart: %+v, want %+v", id, now.history[id], p.view.history[id])
		}
	}
	if got := mustGetTransfer(t, c, "rp-keep"); got.State != "pending" {
		t.Errorf("rp-keep after restart: %+v, want pending", got)
	}
	again, r, err := c.Transfer(TransferReq{ID: "rp-t1", From: "rp-a", To: "rp-b", Amount: 100, Memo: "kept"})
	must(t, r, err, http.StatusOK, "")
	if !reflect.DeepEqual(again, p.transfer) {
		t.Errorf("replay of rp-t1 after restart: %+v, want %+v", again, p.transfer)
	}
	_, r, err = c.CreateAccount(p.spec)
	want(t, r, err, http.StatusOK, "")
	_, r, err = c.Transfer(TransferReq{From: "rp-a", To: "rp-b", Amount: 706})
	want(t, r, err, http.StatusUnprocessableEntity, "insufficient_funds")
}
