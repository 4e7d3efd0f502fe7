package ledger

import "testing"

// A reservation holds its amount from the account's available funds, moves
// no balance, writes a pending record under its id, and is released once;
// its ids are the server's.
func TestReserveHoldsUntilUnreserved(t *testing.T) {
	b, _, _ := newTestBook(t)
	mustCreate(t, b, AccountSpec{ID: "alice", Currency: "USD"})
	fund(t, b, "alice", 100)
	id := AtomicPrefix + "batch.0.0.0"
	if err := b.Reserve(id, "alice", 70, "t1\nt2", t0); err != nil {
		t.Fatal(err)
	}
	if err := b.Reserve(AtomicPrefix+"other", "nobody", 1, "", t0); CodeOf(err) != CodeAccountNotFound {
		t.Fatalf("reserving on an unknown account: %v", err)
	}
	if a, _ := b.Account("alice"); a.Balance != 100 || a.Available() != 30 || !b.Reserved(id) {
		t.Fatalf("reserved: balance %d available %d", a.Balance, a.Available())
	}
	if _, _, err := b.Transfer(TransferRequest{ID: "t3", From: "alice", To: WorldID, Amount: 31}, t0); CodeOf(err) != CodeInsufficientFunds {
		t.Fatalf("spending the reserved funds: %v", err)
	}
	ch := b.Changes()
	if n := len(ch.HoldsOpened); n != 1 || ch.HoldsOpened[0] != id || ch.Transfers[len(ch.Transfers)-1].Memo != "t1\nt2" {
		t.Fatalf("holds opened %v", ch.HoldsOpened)
	}
	b.Unreserve(id, t0)
	b.Unreserve(id, t0)
	if a, _ := b.Account("alice"); a.Available() != 100 || b.Reserved(id) || len(ch.HoldsClosed) != 1 {
		t.Fatalf("unreserved twice: available %d, holds closed %v", a.Available(), ch.HoldsClosed)
	}
	if !ServerTransferID(id) {
		t.Fatalf("%s is not the server's", id)
	}
}
