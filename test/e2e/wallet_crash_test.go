package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestWalletCrash kills the server with SIGKILL in the middle of
// concurrent transfers, three times, and restarts it on the same data.
// Every acknowledged transfer survives in both histories, each transfer in
// the ledger has exactly one TRANSFER message in its pair's chat (the
// intent records rebuild those a kill cut off), money is conserved, and
// tokens issued before a crash still work after it.
func TestWalletCrash(t *testing.T) {
	skipIfShort(t)
	dir := t.TempDir()
	srv := start(t, dir, walletArgs...)
	w := newWalletClients(t, srv.url)
	const fundEach = 100_000
	users := make([]member, 10)
	for i := range users {
		users[i] = w.register(t, "crash")
		fundWallet(t, srv.c, users[i], fundEach)
	}
	w.befriend(t, users[0], users[1])
	if _, err := w.chat.SendMessage(ctxT(t), as(users[0], &walletv1.SendMessageRequest{ToUserId: users[1].id, Text: "before"})); err != nil {
		t.Fatal(err)
	}
	var acked []walletTransfer
	for round := range 3 {
		acked = append(acked, crashRound(t, srv, w, users, 150+100*round)...)
		srv = start(t, dir, walletArgs...)
		w = newWalletClients(t, srv.url)
	}
	var total int64
	for _, u := range users {
		total += w.balance(t, u) // with the tokens issued before the crashes
	}
	if want := int64(len(users) * fundEach); total != want {
		t.Errorf("balances sum to %d, want %d", total, want)
	}
	checkWalletTransfers(t, w, users, acked)
	// The friendship and the acknowledged text message survived too.
	if !w.isFriend(t, users[1], users[0].id) {
		t.Errorf("friendship lost")
	}
	var texts int
	for _, m := range w.messages(t, users[1], users[0].id) {
		if m.Type == walletv1.Message_TEXT && m.Text == "before" {
			texts++
		}
	}
	if texts != 1 {
		t.Errorf("%d copies of the acknowledged text message, want 1", texts)
	}
}

// crashRound runs transfers until kills acknowledgements, kills the server
// with SIGKILL while they go on, and returns what was acknowledged.
func crashRound(t *testing.T, srv *server, w *walletClients, users []member, kills int) []walletTransfer {
	stop := make(chan struct{})
	var once sync.Once
	var n atomic.Int64
	onAck := func() {
		if n.Add(1) == int64(kills) {
			once.Do(func() {
				close(stop) // first: calls failing from here on are the kill's
				srv.kill()
			})
		}
	}
	// After the kill, calls fail with transport errors: expected.
	return walletLoad(t, w, users, fmt.Sprintf("round%d", kills), 6, 1_000_000, stop, onAck, func(error) bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	})
}
