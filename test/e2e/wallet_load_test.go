package e2e

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// walletTransfer is an acknowledged wallet transfer.
type walletTransfer struct {
	id       string
	from, to uint64
	amount   int64
}

// walletLoad sends random transfers among users, with request ids that
// start with idPrefix, from workers goroutines
// until stop is closed or each worker has sent perWorker. It returns the
// acknowledged transfers; refusals other than insufficient funds fail the
// test unless tolerate says so (a server being killed).
func walletLoad(t *testing.T, w *walletClients, users []member, idPrefix string, workers, perWorker int, stop <-chan struct{}, onAck func(), tolerate func(error) bool) []walletTransfer {
	var (
		mu    sync.Mutex
		acked []walletTransfer
		wg    sync.WaitGroup
		seq   atomic.Int64
	)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range perWorker {
				select {
				case <-stop:
					return
				default:
				}
				from := users[rng.IntN(len(users))]
				to := users[rng.IntN(len(users))]
				if to.id == from.id {
					continue
				}
				req := &walletv1.TransferRequest{RequestId: fmt.Sprintf("%s-%d", idPrefix, seq.Add(1)), ToUserId: to.id, Amount: 1 + rng.Int64N(50), Message: "load"}
				res, err := w.wallet.Transfer(ctxT(t), as(from, req))
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, walletTransfer{id: res.Msg.TransferId, from: from.id, to: to.id, amount: req.Amount})
					mu.Unlock()
					if onAck != nil {
						onAck()
					}
				case connect.CodeOf(err) == connect.CodeFailedPrecondition:
				case tolerate != nil && tolerate(err):
					return
				default:
					t.Errorf("transfer: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// TestWalletConcurrentTransfers: random transfers among many users keep
// the total constant, and every acknowledged transfer is in both
// histories and, once, in the pair's chat.
func TestWalletConcurrentTransfers(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	const fundEach = 2000
	users := make([]member, 12)
	for i := range users {
		users[i] = w.register(t, "conc")
		fundWallet(t, srv.c, users[i], fundEach)
	}
	acked := walletLoad(t, w, users, "load", 8, 60, nil, nil, nil)
	if len(acked) == 0 {
		t.Fatal("no transfer was acknowledged")
	}
	var total int64
	for _, u := range users {
		total += w.balance(t, u)
	}
	if want := int64(len(users) * fundEach); total != want {
		t.Errorf("balances sum to %d, want %d", total, want)
	}
	checkWalletTransfers(t, w, users, acked)
}

// checkWalletTransfers checks every acknowledged transfer against both
// histories, and that the TRANSFER messages of every pair are exactly the
// transfers between them in the ledger: one message per transfer.
func checkWalletTransfers(t *testing.T, w *walletClients, users []member, acked []walletTransfer) {
	t.Helper()
	byID := map[uint64]member{}
	sends := map[string]*walletv1.HistoryItem{}
	receives := map[string]bool{}
	for _, u := range users {
		byID[u.id] = u
		for _, it := range w.history(t, u) {
			switch it.Type {
			case walletv1.HistoryItem_SEND:
				sends[it.TransferId] = it
			case walletv1.HistoryItem_RECEIVE:
				receives[it.TransferId] = true
			}
		}
	}
	for _, a := range acked {
		s, ok := sends[a.id]
		if !ok || s.CounterpartUserId != a.to || s.Amount != a.amount || !receives[a.id] {
			t.Errorf("acknowledged transfer %v: SEND %v, RECEIVE %v", a, s, receives[a.id])
		}
	}
	messages := map[string]int{}
	for i, u := range users {
		for _, peer := range users[i+1:] {
			for _, m := range w.messages(t, u, peer.id) {
				if m.Type == walletv1.Message_TRANSFER {
					messages[m.TransferId]++
				}
			}
		}
	}
	for id, s := range sends {
		if messages[id] != 1 {
			t.Errorf("transfer %s (%d to %s) has %d TRANSFER messages, want 1", id, s.Amount, s.CounterpartUsername, messages[id])
		}
	}
	for id := range messages {
		if sends[id] == nil {
			t.Errorf("TRANSFER message for %s, which is in no history", id)
		}
	}
}
