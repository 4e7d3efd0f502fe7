package calls

import (
	"context"
	"log/slog"
	"testing"
)

// A node that restarts under the same id gets a new caller: a reply to a
// request of its previous run (an owner may commit one after the
// restart) completes no call of the new one, even the call its previous
// run's sequence number names.
func TestRepliesOfAPreviousRunAnswerNoCall(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	before, after := newCaller("n1", 1, log), newCaller("n1", 1, log)
	var old string
	before.SetLocal(func(_ int32, key, _ []byte) bool {
		_, rid, _ := ReplyAddress(key)
		old = string(rid)
		before.Deliver(old, []byte("first run's"))
		return true
	})
	if _, err := before.Call(context.Background(), 0, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if before.Mine([]byte(old)) == after.Mine([]byte(old)) {
		t.Fatalf("request %s is the previous run's (%v) and the new one's (%v)", old, before.Mine([]byte(old)), after.Mine([]byte(old)))
	}
	after.SetLocal(func(_ int32, key, _ []byte) bool {
		_, rid, _ := ReplyAddress(key)
		after.Deliver(old, []byte("first run's"))
		after.Deliver(string(rid), []byte("second run's"))
		return true
	})
	got, err := after.Call(context.Background(), 0, []byte("c"))
	if err != nil || string(got) != "second run's" {
		t.Fatalf("the new run's first call got %q, %v; want its own reply", got, err)
	}
}
