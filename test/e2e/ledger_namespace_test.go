package e2e

import (
	"net/http"
	"testing"

	"connectrpc.com/connect"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// The ids the server assigns — wallet accounts and transfers, reservation
// payments — cannot be taken through the ledger API: a client that
// created the next wallet's account first would break every later
// registration.
func TestLedgerRefusesServerNamespaces(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	for _, id := range []string{"wallet:1", "wallet:2", "wallet:3"} {
		if _, r, err := srv.c.CreateAccount(NewAccount{ID: id, Currency: "EUR"}); err != nil || r.Status != http.StatusBadRequest {
			t.Errorf("creating account %s: %v %v", id, r, err)
		}
	}
	if _, r, err := srv.c.CreateAccount(NewAccount{ID: "alice", Currency: "USD"}); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("account alice: %v %v", r, err)
	}
	for _, id := range []string{"wallet:1:r1", "pay-8c4d3bd4-1a8b-4b0e-9a53-0d2e2f3c8d11-0badcafe"} {
		if _, r, err := srv.c.Transfer(TransferReq{ID: id, From: "@world", To: "alice", Amount: 1}); err != nil || r.Status != http.StatusBadRequest {
			t.Errorf("transfer %s: %v %v", id, r, err)
		}
	}
	if _, r, err := srv.c.Transfer(TransferReq{ID: "pay-roll-1", From: "@world", To: "alice", Amount: 1}); err != nil || r.Status != http.StatusCreated {
		t.Errorf("transfer pay-roll-1, no reservation's: %v %v", r, err)
	}
	w := newWalletClients(t, srv.url)
	for _, name := range []string{"first", "second"} {
		if _, err := w.auth.Register(ctxT(t), connect.NewRequest(&walletv1.RegisterRequest{Username: name, Name: name, Password: "password1"})); err != nil {
			t.Errorf("register %s: %v", name, err)
		}
	}
}
