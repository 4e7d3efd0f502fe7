package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
	"github.com/surge-dev/surge/internal/workloads"
)

// TestWalletCrash kills the server with SIGKILL in the middle of
// concurrent transfers, three times, and restarts it on the same data.
// Every acknowledged transfer survives in both histories, each transfer in
// the ledger has exactly one TRANSFER message in its pair's chat (written
// in the transfer's own batch, or rebuilt at start from the intent records
// of those a kill cut off), money is conserved, and
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

// TestWalletResolvesLeftIntents: a crash can leave transfer intents (of
// transfers whose message did not ride in the ledger's batch, and in data
// of older versions). On start the wallet writes the message of each
// posted transfer with an intent, exactly once, and drops the intents of
// transfers never made.
func TestWalletResolvesLeftIntents(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, walletArgs...)
	w := newWalletClients(t, srv.url)
	a, b := w.register(t, "intent"), w.register(t, "intent")
	fundWallet(t, srv.c, a, 100)
	srv.stop()
	// Made by the engine alone (the ledger API refuses wallet ids), this
	// transfer between the two wallets has no chat message: like one whose
	// message a crash cut off.
	id := "wallet:" + strconv.FormatUint(a.id, 10) + ":left"
	set, err := workloads.Open(context.Background(), workloads.Config{Engine: engine.Config{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = set.Ledger.Transfer(context.Background(), ledger.TransferRequest{ID: id, From: walletAccount(a), To: walletAccount(b), Amount: 30, Memo: "left"})
	if cerr := set.Close(); err != nil || cerr != nil {
		t.Fatalf("transfer %s: %v; close: %v", id, err, cerr)
	}
	writeIntents(t, dir, id, "wallet:"+strconv.FormatUint(a.id, 10)+":never-made")

	for round := range 2 { // the second start finds nothing left to do
		srv = start(t, dir, walletArgs...)
		w = newWalletClients(t, srv.url)
		var got []*walletv1.Message
		for _, m := range w.messages(t, b, a.id) {
			if m.Type == walletv1.Message_TRANSFER {
				got = append(got, m)
			}
		}
		if len(got) != 1 || got[0].TransferId != id || got[0].Amount != 30 || got[0].Text != "left" || got[0].FromUserId != a.id {
			t.Fatalf("start %d: TRANSFER messages %v, want one of transfer %s", round+1, got, id)
		}
		srv.stop()
	}
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if left, err := (walletstore.Store{Store: db}).TransferIntents(); err != nil || len(left) != 0 {
		t.Fatalf("intents left after recovery: %v (%v)", left, err)
	}
}

// writeIntents records transfer intents in a stopped server's storage, as
// if a crash had cut off their messages.
func writeIntents(t *testing.T, dir string, ids ...string) {
	t.Helper()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for _, id := range ids {
		if err := b.Set(walletstore.TransferIntentKey(id), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
