package dashboard

import (
	"context"
	"fmt"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/workloads"
)

func openFeed(t *testing.T) *LedgerFeed {
	t.Helper()
	eng, err := workloads.Open(context.Background(), workloads.Config{Engine: engine.Config{Dir: t.TempDir(), Shards: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	f := NewLedgerFeed(eng.Ledger)
	for _, id := range []string{"alice", "bob"} {
		if _, _, err := f.CreateAccount(context.Background(), ledger.AccountSpec{ID: id, Currency: "USD"}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func ids(ts []TransferSummary) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID + ":" + t.State
	}
	return out
}

func TestLedgerFeedKeepsAcknowledgedTransfers(t *testing.T) {
	f := openFeed(t)
	ctx := context.Background()
	must := func(_ any, _ bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Transfer(ctx, ledger.TransferRequest{ID: "fund", From: "@world", To: "alice", Amount: 100}))
	must(f.Transfer(ctx, ledger.TransferRequest{ID: "fund", From: "@world", To: "alice", Amount: 100})) // replay
	if _, _, err := f.Transfer(ctx, ledger.TransferRequest{ID: "over", From: "bob", To: "alice", Amount: 1}); err == nil {
		t.Fatal("bob overdrew")
	}
	must(f.Transfer(ctx, ledger.TransferRequest{ID: "hold", From: "alice", To: "bob", Amount: 10, Pending: true}))
	if _, err := f.PostPending(ctx, "hold", 0); err != nil {
		t.Fatal(err)
	}
	res, err := f.TransferBatch(ctx, []ledger.TransferRequest{
		{ID: "b1", From: "alice", To: "bob", Amount: 1},
		{ID: "b2", From: "bob", To: "alice", Amount: 1000}, // refused
		{ID: "b3", From: "bob", To: "alice", Amount: 2},
	}, false)
	if err != nil || res[1].Err == nil {
		t.Fatalf("batch: %v, %+v", err, res)
	}
	got := ids(f.Recent(10))
	want := []string{"b3:posted", "b1:posted", "hold:posted", "hold:pending", "fund:posted"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Recent = %v, want %v", got, want)
	}
	if top := f.Recent(1)[0]; top.From != "bob" || top.To != "alice" || top.Amount != 2 || top.Currency != "USD" || top.At.IsZero() {
		t.Errorf("newest %+v", top)
	}
}

func TestLedgerFeedIsBounded(t *testing.T) {
	f := openFeed(t)
	reqs := make([]ledger.TransferRequest, feedCapacity+40)
	for i := range reqs {
		reqs[i] = ledger.TransferRequest{ID: fmt.Sprintf("f%03d", i), From: "@world", To: "alice", Amount: 1}
	}
	if _, err := f.TransferBatch(context.Background(), reqs, false); err != nil {
		t.Fatal(err)
	}
	got := f.Recent(feedCapacity * 2)
	if len(got) != feedCapacity {
		t.Fatalf("%d kept, want %d", len(got), feedCapacity)
	}
	if first, last := got[0].ID, got[len(got)-1].ID; first != reqs[len(reqs)-1].ID || last != reqs[len(reqs)-feedCapacity].ID {
		t.Errorf("kept %s … %s, want the newest %d", first, last, feedCapacity)
	}
}
