package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// maxBatch is the documented largest batch.
const maxBatch = 8190

// TestBatch covers POST /v1/transfers/batch: per-item results of a
// non-atomic batch, all-or-nothing atomic batches, and the size limit.
func TestBatch(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "4")
	c := srv.c
	t.Run("non_atomic", func(t *testing.T) { testBatchNonAtomic(t, c) })
	t.Run("in_order_per_source", func(t *testing.T) { testBatchInOrder(t, c) })
	t.Run("duplicate_ids", func(t *testing.T) { testBatchDuplicateIDs(t, c) })
	t.Run("atomic_aborted", func(t *testing.T) { testBatchAtomicAborted(t, c) })
	t.Run("atomic_applied", func(t *testing.T) { testBatchAtomicApplied(t, c) })
	t.Run("max_size", func(t *testing.T) { testBatchMaxSize(t, c) })
	t.Run("too_large", func(t *testing.T) { testBatchTooLarge(t, c) })
}

// itemWant is the expected outcome of one batch item.
type itemWant struct {
	status int
	code   string
}

// wantBatch sends a batch, expects the reply status, and checks each
// item's id, status and code.
func wantBatch(t *testing.T, c *Client, b BatchReq, status int, items []itemWant) {
	t.Helper()
	got, r, err := c.Batch(b)
	if !wantStatus(t, r, err, status) { // an aborted batch answers results, not a problem
		return
	}
	if len(got.Results) != len(items) {
		t.Errorf("batch of %d gave %d results: %s", len(items), len(got.Results), r)
		return
	}
	for i, w := range items {
		g := got.Results[i]
		if g.ID != b.Transfers[i].ID || g.Status != w.status || g.Code != w.code {
			t.Errorf("batch item %d (%+v): got %+v, want status %d code %q", i, b.Transfers[i], g, w.status, w.code)
		}
	}
}

// replayed turns the expectations of a first run into those of a replay
// of the same batch: created items answer 200.
func replayed(items []itemWant) []itemWant {
	out := make([]itemWant, len(items))
	for i, w := range items {
		if w.status == http.StatusCreated {
			w.status = http.StatusOK
		}
		out[i] = w
	}
	return out
}

// testBatchNonAtomic: good items apply, bad ones fail alone with their own
// code; replaying the batch replays the good ones.
func testBatchNonAtomic(t *testing.T, c *Client) {
	openAccounts(t, c, "ba-a", "ba-b")
	fund(t, c, "ba-a", 100)
	b := BatchReq{Transfers: []TransferReq{
		{ID: "ba-1", From: "ba-a", To: "ba-b", Amount: 10},
		{ID: "ba-2", From: "ba-a", To: "ba-ghost", Amount: 1},
		{ID: "ba-3", From: "ba-a", To: "ba-b", Amount: 1000},
		{ID: "ba-4", From: "ba-a", To: "ba-b", Amount: 20},
		{ID: "ba-5", From: "ba-a", To: "ba-a", Amount: 1},
		{ID: "ba-6", From: world, To: "ba-b", Amount: 5},
	}}
	items := []itemWant{{201, ""}, {404, "account_not_found"}, {422, "insufficient_funds"}, {201, ""}, {422, "same_account"}, {201, ""}}
	wantBatch(t, c, b, http.StatusOK, items)
	wantBalance(t, c, "ba-a", 70, 0)
	wantBalance(t, c, "ba-b", 35, 0)
	wantStored(t, c, []TransferReq{b.Transfers[0], b.Transfers[3], b.Transfers[5]})
	wantNotStored(t, c, []TransferReq{b.Transfers[1], b.Transfers[2], b.Transfers[4]})

	wantBatch(t, c, b, http.StatusOK, replayed(items))
	wantBalance(t, c, "ba-a", 70, 0)
	wantBalance(t, c, "ba-b", 35, 0)
}

// testBatchInOrder: items from one source apply in order, so a later item
// sees the funds the earlier ones used.
func testBatchInOrder(t *testing.T, c *Client) {
	openAccounts(t, c, "bo-a", "bo-b")
	fund(t, c, "bo-a", 100)
	b := BatchReq{Transfers: []TransferReq{
		{ID: "bo-1", From: "bo-a", To: "bo-b", Amount: 60},
		{ID: "bo-2", From: "bo-a", To: "bo-b", Amount: 60},
		{ID: "bo-3", From: "bo-a", To: "bo-b", Amount: 40},
	}}
	wantBatch(t, c, b, http.StatusOK, []itemWant{{201, ""}, {422, "insufficient_funds"}, {201, ""}})
	wantBalance(t, c, "bo-a", 0, 0)
	wantBalance(t, c, "bo-b", 100, 0)
}

// testBatchDuplicateIDs: an id repeated within one batch is a replay when
// the body is the same (201 then 200) and a conflict when it is not (one
// 201, one 409 idempotency_conflict, whichever source goes first); money
// moves once per id.
func testBatchDuplicateIDs(t *testing.T, c *Client) {
	openAccounts(t, c, "bd-a", "bd-b", "bd-c")
	fund(t, c, "bd-a", 100)
	fund(t, c, "bd-b", 100)
	same := TransferReq{ID: "bd-1", From: "bd-a", To: "bd-c", Amount: 5}
	wantBatch(t, c, BatchReq{Transfers: []TransferReq{same, same}}, http.StatusOK, []itemWant{{201, ""}, {200, ""}})

	rivals := []TransferReq{{ID: "bd-2", From: "bd-a", To: "bd-c", Amount: 5}, {ID: "bd-2", From: "bd-b", To: "bd-c", Amount: 6}}
	got, r, err := c.Batch(BatchReq{Transfers: rivals})
	if !wantStatus(t, r, err, http.StatusOK) || len(got.Results) != 2 {
		t.Fatalf("batch of rivals: %v", r)
	}
	winner := 0
	if got.Results[1].Status == http.StatusCreated {
		winner = 1
	}
	loser := got.Results[1-winner]
	if got.Results[winner].Status != http.StatusCreated || loser.Status != http.StatusConflict || loser.Code != "idempotency_conflict" {
		t.Errorf("rival items: got %+v, want one 201 and one 409 idempotency_conflict", got.Results)
	}
	stored := mustGetTransfer(t, c, "bd-2")
	if stored.From != rivals[winner].From {
		t.Errorf("bd-2 stored as %+v, but item %d was created", stored, winner)
	}
	wantBalance(t, c, "bd-c", 5+stored.Amount, 0)
}

// testBatchAtomicAborted: one bad item aborts an atomic batch: 422, that
// item's own code, batch_aborted for the others, and nothing applied.
func testBatchAtomicAborted(t *testing.T, c *Client) {
	openAccounts(t, c, "bb-a", "bb-b")
	fund(t, c, "bb-a", 100)
	snap := takeSnapshot(t, c, "bb-a", "bb-b")
	aborted := itemWant{422, "batch_aborted"}
	unknown := BatchReq{Atomic: true, Transfers: []TransferReq{
		{ID: "bb-1", From: "bb-a", To: "bb-b", Amount: 5},
		{ID: "bb-2", From: "bb-a", To: "bb-b", Amount: 6},
		{ID: "bb-3", From: "bb-a", To: "bb-ghost", Amount: 1},
	}}
	wantBatch(t, c, unknown, http.StatusUnprocessableEntity, []itemWant{aborted, aborted, {404, "account_not_found"}})
	overdrawn := BatchReq{Atomic: true, Transfers: []TransferReq{
		{ID: "bb-4", From: "bb-a", To: "bb-b", Amount: 60},
		{ID: "bb-5", From: "bb-a", To: "bb-b", Amount: 60},
	}}
	wantBatch(t, c, overdrawn, http.StatusUnprocessableEntity, []itemWant{aborted, {422, "insufficient_funds"}})
	snap.wantUnchanged(t, c)
	wantNotStored(t, c, append(unknown.Transfers, overdrawn.Transfers...))
}

// testBatchAtomicApplied: an atomic batch of good items applies them all,
// and its replay answers 200 per item and changes nothing.
func testBatchAtomicApplied(t *testing.T, c *Client) {
	openAccounts(t, c, "bc-a", "bc-b", "bc-c")
	fund(t, c, "bc-a", 100)
	fund(t, c, "bc-b", 30)
	b := BatchReq{Atomic: true, Transfers: []TransferReq{
		{ID: "bc-1", From: "bc-a", To: "bc-b", Amount: 50},
		{ID: "bc-2", From: "bc-b", To: "bc-c", Amount: 30},
		{ID: "bc-3", From: world, To: "bc-c", Amount: 7},
	}}
	created := []itemWant{{201, ""}, {201, ""}, {201, ""}}
	wantBatch(t, c, b, http.StatusOK, created)
	wantStored(t, c, b.Transfers)
	wantBatch(t, c, b, http.StatusOK, replayed(created))
	wantBalance(t, c, "bc-a", 50, 0)
	wantBalance(t, c, "bc-b", 50, 0)
	wantBalance(t, c, "bc-c", 37, 0)
}

// fundingBatch is n transfers of 1 from @world to account, ids prefix-i.
func fundingBatch(prefix, account string, n int) BatchReq {
	b := BatchReq{Transfers: make([]TransferReq, n)}
	for i := range b.Transfers {
		b.Transfers[i] = TransferReq{ID: fmt.Sprintf("%s-%d", prefix, i), From: world, To: account, Amount: 1}
	}
	return b
}

// testBatchMaxSize: a batch of exactly 8,190 items is accepted whole.
func testBatchMaxSize(t *testing.T, c *Client) {
	openAccounts(t, c, "bm-x")
	b := fundingBatch("bm", "bm-x", maxBatch)
	items := make([]itemWant, maxBatch)
	for i := range items {
		items[i] = itemWant{201, ""}
	}
	wantBatch(t, c, b, http.StatusOK, items)
	a := mustAccount(t, c, "bm-x")
	if a.Balance != maxBatch || a.Entries != maxBatch {
		t.Errorf("after a batch of %d: %+v", maxBatch, a)
	}
}

// testBatchTooLarge: 8,191 items is 413 batch_too_large and applies none.
func testBatchTooLarge(t *testing.T, c *Client) {
	openAccounts(t, c, "bt-x")
	snap := takeSnapshot(t, c, "bt-x", world)
	b := fundingBatch("bt", "bt-x", maxBatch+1)
	_, r, err := c.Batch(b)
	want(t, r, err, http.StatusRequestEntityTooLarge, "batch_too_large")
	snap.wantUnchanged(t, c)
	wantNotStored(t, c, b.Transfers[:1])
}
