package e2e

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// expiryTimeout bounds the wait for a hold to expire; the hold's own
// timeout is far shorter.
const expiryTimeout = 30 * time.Second

// TestTwoPhase covers pending transfers: holds, full and partial posts,
// voids, refusals on transfers that are no longer pending, and expiry.
func TestTwoPhase(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "4")
	c := srv.c
	t.Run("hold_and_post", func(t *testing.T) { testHoldAndPost(t, c) })
	t.Run("partial_post", func(t *testing.T) { testPartialPost(t, c) })
	t.Run("void", func(t *testing.T) { testVoid(t, c) })
	t.Run("exceeds_pending", func(t *testing.T) { testExceedsPending(t, c) })
	t.Run("not_pending", func(t *testing.T) { testNotPending(t, c) })
	t.Run("expiry", func(t *testing.T) { testExpiry(t, c) })
}

// payerPayee opens prefix-payer funded with 1000 and an empty
// prefix-payee.
func payerPayee(t *testing.T, c *Client, prefix string) (payer, payee string) {
	t.Helper()
	payer, payee = prefix+"-payer", prefix+"-payee"
	openAccounts(t, c, payer, payee)
	fund(t, c, payer, 1000)
	return payer, payee
}

// hold makes a pending transfer and checks the returned object.
func hold(t *testing.T, c *Client, req TransferReq) Transfer {
	t.Helper()
	req.Pending = true
	tr := mustTransfer(t, c, req)
	wantTransferFields(t, tr, req, "pending", 0)
	return tr
}

// wantHistoryLen checks how many entries an account's history has.
func wantHistoryLen(t *testing.T, c *Client, id string, n int) []Entry {
	t.Helper()
	h := mustHistory(t, c, id)
	if len(h) != n {
		t.Errorf("%s has %d history entries, want %d: %+v", id, len(h), n, h)
	}
	return h
}

// testHoldAndPost: a hold lowers available, not balance, and shows in no
// history; holds add up; posting without a body moves all of it.
func testHoldAndPost(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-hold")
	req := TransferReq{ID: "tp-hold-1", From: payer, To: payee, Amount: 300, Pending: true}
	first := hold(t, c, req)
	if first.ExpiresAt != "" {
		t.Errorf("a hold without timeout has expires_at %q", first.ExpiresAt)
	}
	wantBalance(t, c, payer, 1000, 300)
	wantBalance(t, c, payee, 0, 0)
	wantHistoryLen(t, c, payer, 1)
	wantHistoryLen(t, c, payee, 0)

	again, r, err := c.Transfer(req)
	must(t, r, err, http.StatusOK, "")
	if !reflect.DeepEqual(again, first) {
		t.Errorf("replayed hold: got %+v, want %+v", again, first)
	}
	hold(t, c, TransferReq{ID: "tp-hold-2", From: payer, To: payee, Amount: 400})
	wantBalance(t, c, payer, 1000, 700)
	for _, p := range []bool{false, true} {
		_, r, err := c.Transfer(TransferReq{From: payer, To: payee, Amount: 301, Pending: p})
		want(t, r, err, http.StatusUnprocessableEntity, "insufficient_funds")
	}

	posted, r, err := c.Post(req.ID, 0)
	must(t, r, err, http.StatusOK, "")
	if posted.State != "posted" || posted.PostedAmount != 300 || posted.Amount != 300 {
		t.Errorf("post all: got %+v, want posted with posted_amount 300", posted)
	}
	wantBalance(t, c, payer, 700, 400)
	wantBalance(t, c, payee, 300, 0)
	if got := mustGetTransfer(t, c, req.ID); got.State != "posted" || got.PostedAmount != 300 {
		t.Errorf("GET after post: %+v", got)
	}
	h := wantHistoryLen(t, c, payer, 2)
	if len(h) == 2 && (h[0].TransferID != req.ID || h[0].Direction != "debit" || h[0].Amount != 300) {
		t.Errorf("payer's newest entry %+v, want the posted debit of 300", h[0])
	}
}

// testPartialPost: posting part of a hold moves that part and releases the
// rest.
func testPartialPost(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-part")
	hold(t, c, TransferReq{ID: "tp-part-1", From: payer, To: payee, Amount: 200})
	posted, r, err := c.Post("tp-part-1", 50)
	must(t, r, err, http.StatusOK, "")
	if posted.State != "posted" || posted.PostedAmount != 50 || posted.Amount != 200 {
		t.Errorf("partial post: got %+v, want posted, amount 200, posted_amount 50", posted)
	}
	wantBalance(t, c, payer, 950, 0)
	wantBalance(t, c, payee, 50, 0)
	h := wantHistoryLen(t, c, payee, 1)
	if len(h) == 1 && (h[0].TransferID != "tp-part-1" || h[0].Amount != 50 || h[0].Direction != "credit") {
		t.Errorf("payee's entry %+v, want a credit of 50 by tp-part-1", h[0])
	}
}

// testVoid: voiding releases the hold and moves nothing; a voided transfer
// can be neither posted nor voided again.
func testVoid(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-void")
	hold(t, c, TransferReq{ID: "tp-void-1", From: payer, To: payee, Amount: 100})
	voided, r, err := c.Void("tp-void-1")
	must(t, r, err, http.StatusOK, "")
	if voided.State != "voided" || voided.PostedAmount != 0 {
		t.Errorf("void: got %+v, want voided with posted_amount 0", voided)
	}
	wantBalance(t, c, payer, 1000, 0)
	wantBalance(t, c, payee, 0, 0)
	wantRefusedNotPending(t, c, "tp-void-1")
	wantHistoryLen(t, c, payer, 1)
	if got := mustGetTransfer(t, c, "tp-void-1"); got.State != "voided" {
		t.Errorf("GET after void: %+v", got)
	}
}

// wantRefusedNotPending checks that both post and void of id are 409
// transfer_not_pending and change nothing.
func wantRefusedNotPending(t *testing.T, c *Client, id string) {
	t.Helper()
	before := mustGetTransfer(t, c, id)
	_, r, err := c.Post(id, 0)
	want(t, r, err, http.StatusConflict, "transfer_not_pending")
	_, r, err = c.Void(id)
	want(t, r, err, http.StatusConflict, "transfer_not_pending")
	if after := mustGetTransfer(t, c, id); !reflect.DeepEqual(after, before) {
		t.Errorf("refused post/void changed %s: %+v -> %+v", id, before, after)
	}
}

// testExceedsPending: posting more than is held is 422 exceeds_pending and
// leaves the hold; posting exactly the hold works.
func testExceedsPending(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-exc")
	hold(t, c, TransferReq{ID: "tp-exc-1", From: payer, To: payee, Amount: 100})
	_, r, err := c.Post("tp-exc-1", 101)
	want(t, r, err, http.StatusUnprocessableEntity, "exceeds_pending")
	if got := mustGetTransfer(t, c, "tp-exc-1"); got.State != "pending" {
		t.Errorf("after refused post: %+v, want still pending", got)
	}
	wantBalance(t, c, payer, 1000, 100)
	posted, r, err := c.Post("tp-exc-1", 100)
	must(t, r, err, http.StatusOK, "")
	if posted.PostedAmount != 100 {
		t.Errorf("post of exactly the hold: %+v", posted)
	}
	wantBalance(t, c, payer, 900, 0)
}

// testNotPending: post and void of posted transfers (two-phase or not) are
// 409 transfer_not_pending; of unknown ones 404 transfer_not_found.
func testNotPending(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-np")
	mustTransfer(t, c, TransferReq{ID: "tp-np-single", From: payer, To: payee, Amount: 10})
	wantRefusedNotPending(t, c, "tp-np-single")
	hold(t, c, TransferReq{ID: "tp-np-posted", From: payer, To: payee, Amount: 10})
	_, r, err := c.Post("tp-np-posted", 0)
	must(t, r, err, http.StatusOK, "")
	wantRefusedNotPending(t, c, "tp-np-posted")
	wantBalance(t, c, payer, 980, 0)
	_, r, err = c.Post("tp-np-nothing", 0)
	want(t, r, err, http.StatusNotFound, "transfer_not_found")
	_, r, err = c.Void("tp-np-nothing")
	want(t, r, err, http.StatusNotFound, "transfer_not_found")
}

// testExpiry: a hold with a short timeout_ms becomes expired on its own,
// which releases the hold and moves nothing.
func testExpiry(t *testing.T, c *Client) {
	payer, payee := payerPayee(t, c, "tp-exp")
	tr := hold(t, c, TransferReq{ID: "tp-exp-1", From: payer, To: payee, Amount: 100, TimeoutMS: 200})
	wantExpiresAt(t, tr)
	waitState(t, c, tr.ID, "expired")
	wantBalance(t, c, payer, 1000, 0)
	wantBalance(t, c, payee, 0, 0)
	wantHistoryLen(t, c, payer, 1)
	if got := mustGetTransfer(t, c, tr.ID); got.PostedAmount != 0 {
		t.Errorf("expired transfer moved money: %+v", got)
	}
	wantRefusedNotPending(t, c, tr.ID)
}

// wantExpiresAt checks that a hold's expires_at is its created_at plus its
// timeout, and returns it.
func wantExpiresAt(t *testing.T, tr Transfer) time.Time {
	t.Helper()
	created := parseTime(t, "created_at", tr.CreatedAt)
	expires := parseTime(t, "expires_at", tr.ExpiresAt)
	if d := time.Duration(tr.TimeoutMS) * time.Millisecond; !expires.Equal(created.Add(d)) {
		t.Errorf("expires_at %s, want created_at %s + %v", tr.ExpiresAt, tr.CreatedAt, d)
	}
	return expires
}

// waitState polls GET /v1/transfers/{id} until its state is state.
func waitState(t *testing.T, c *Client, id, state string) {
	t.Helper()
	poll(t, expiryTimeout, id+" state "+state, func() (bool, string) {
		got, r, err := c.GetTransfer(id)
		if err != nil {
			return false, err.Error()
		}
		return r.Status == http.StatusOK && got.State == state, r.String()
	})
}
