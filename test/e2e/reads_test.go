package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// readsTransfers is how many transfers TestLinearizableReads makes.
const readsTransfers = 300

// TestLinearizableReads checks that reads are linearizable (docs/API.md,
// "Promises"): one client moves money from lz-p to lz-q, one transfer at a
// time, and checks after each acknowledgement that both balances show it;
// meanwhile another client waits for each transfer to become visible
// through GET /v1/transfers/{id} and then reads lz-p, which must already
// show the debit, in its balance and in its history.
func TestLinearizableReads(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "4")
	c := srv.c
	openAccounts(t, c, "lz-p", "lz-q")
	fund(t, c, "lz-p", readsTransfers)

	var wg sync.WaitGroup
	wg.Go(func() { writeAndReadBack(t, c) })
	staleBalance, staleHistory := 0, 0
	for k := range readsTransfers {
		if !awaitTransfer(t, c, transferID(k)) {
			break
		}
		balanceOK, historyOK := debitVisible(t, c, k)
		if !balanceOK {
			staleBalance++
		}
		if !historyOK {
			staleHistory++
		}
	}
	wg.Wait()
	if staleBalance+staleHistory > 0 {
		t.Errorf("after GET /v1/transfers/{id} had returned a transfer, lz-p did not yet show its debit: %d of %d times in the balance, %d in the history",
			staleBalance, readsTransfers, staleHistory)
	}
}

// transferID names the k-th transfer of TestLinearizableReads.
func transferID(k int) string { return fmt.Sprintf("lz-%d", k) }

// writeAndReadBack makes the transfers one by one and checks that each
// acknowledged one shows on both accounts at once.
func writeAndReadBack(t *testing.T, c *Client) {
	for k := range readsTransfers {
		_, r, err := c.Transfer(TransferReq{ID: transferID(k), From: "lz-p", To: "lz-q", Amount: 1})
		if !want(t, r, err, http.StatusCreated, "") {
			return
		}
		p, rp, errp := c.Account("lz-p")
		q, rq, errq := c.Account("lz-q")
		if !want(t, rp, errp, http.StatusOK, "") || !want(t, rq, errq, http.StatusOK, "") {
			return
		}
		if moved := int64(k + 1); p.Balance != readsTransfers-moved || q.Balance != moved {
			t.Errorf("after acknowledged transfer %d: lz-p %d, lz-q %d; want %d and %d", k, p.Balance, q.Balance, readsTransfers-moved, moved)
		}
	}
}

// awaitTransfer polls GET /v1/transfers/{id}, without pausing (to catch
// the moment it appears), until it answers 200.
func awaitTransfer(t *testing.T, c *Client, id string) bool {
	deadline := time.Now().Add(expiryTimeout)
	for time.Now().Before(deadline) {
		_, r, err := c.GetTransfer(id)
		if err != nil {
			t.Errorf("GET %s: %v", id, err)
			return false
		}
		if r.Status == http.StatusOK {
			return true
		}
	}
	t.Errorf("transfer %s did not appear within %v", id, expiryTimeout)
	return false
}

// debitVisible reads lz-p after transfer k was seen, and reports whether
// its balance and its history include that transfer (its entry has seq
// k+2, after the funding).
func debitVisible(t *testing.T, c *Client, k int) (balance, history bool) {
	a, r, err := c.Account("lz-p")
	if !want(t, r, err, http.StatusOK, "") {
		return false, false
	}
	p, r, err := c.HistoryPage("lz-p", url.Values{"limit": {"1"}})
	if !want(t, r, err, http.StatusOK, "") {
		return false, false
	}
	return a.Balance <= int64(readsTransfers-k-1), len(p.Items) == 1 && p.Items[0].Seq >= uint64(k+2)
}
