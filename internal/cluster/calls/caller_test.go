package calls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
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
		before.Deliver(rid, []byte("first run's"))
		return true
	})
	if _, err := before.Call(context.Background(), 0, []byte("c"), Writes); err != nil {
		t.Fatal(err)
	}
	if before.Mine([]byte(old)) == after.Mine([]byte(old)) {
		t.Fatalf("request %s is the previous run's (%v) and the new one's (%v)", old, before.Mine([]byte(old)), after.Mine([]byte(old)))
	}
	after.SetLocal(func(_ int32, key, _ []byte) bool {
		_, rid, _ := ReplyAddress(key)
		after.Deliver([]byte(old), []byte("first run's"))
		after.Deliver(rid, []byte("second run's"))
		return true
	})
	got, err := after.Call(context.Background(), 0, []byte("c"), Writes)
	if err != nil || string(got) != "second run's" {
		t.Fatalf("the new run's first call got %q, %v; want its own reply", got, err)
	}
}

// appends records the commands appended to the commands topic, and has
// each answered by deliver.
type appends struct {
	mu      sync.Mutex
	n       int
	deliver func(key []byte)
}

func (a *appends) Append(_ context.Context, _ int32, key, _ []byte) (int64, error) {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
	a.deliver(key)
	return 0, nil
}

func (a *appends) Close() {}

func (a *appends) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// A call lost on its way to its owner (its peer link broke) is sent again
// through the commands topic if its command only reads, and answered from
// there; a command that may write fails, since it may have been applied.
func TestLostReadsGoAgainThroughKafka(t *testing.T) {
	lost := fmt.Errorf("link broke: %w", ErrLost)
	for _, tc := range []struct {
		effect  Effect
		appends int
		err     error
	}{{ReadsOnly, 1, nil}, {Writes, 0, lost}} {
		k := newCaller("n1", 1, slog.New(slog.DiscardHandler))
		prod := &appends{deliver: func(key []byte) {
			_, rid, _ := ReplyAddress(key)
			k.Deliver(rid, []byte("from kafka"))
		}}
		k.prod = prod
		k.SetLocal(func(_ int32, key, _ []byte) bool {
			_, rid, _ := ReplyAddress(key)
			k.Fail(rid, lost)
			return true
		})
		got, err := k.Call(context.Background(), 0, []byte("c"), tc.effect)
		if !errors.Is(err, tc.err) || prod.count() != tc.appends {
			t.Fatalf("effect %d: got %q, %v after %d appends; want error %v after %d", tc.effect, got, err, prod.count(), tc.err, tc.appends)
		}
		if tc.err == nil && string(got) != "from kafka" {
			t.Fatalf("effect %d: got %q, want the reply through Kafka", tc.effect, got)
		}
	}
}

// A call that no answer reaches fails once its deadline's second passed,
// not before.
func TestUnansweredCallExpires(t *testing.T) {
	k := newCaller("n1", 1, slog.New(slog.DiscardHandler))
	taken := make(chan struct{})
	k.SetLocal(func(int32, []byte, []byte) bool { close(taken); return true })
	res := make(chan error, 1)
	go func() {
		_, err := k.Call(context.Background(), 0, []byte("c"), Writes)
		res <- err
	}()
	<-taken
	for range Timeout / time.Second {
		k.tick()
	}
	select {
	case err := <-res:
		t.Fatalf("the call ended before its deadline: %v", err)
	default:
	}
	k.tick()
	if err := <-res; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an expired call got %v, want context.DeadlineExceeded", err)
	}
}

// Only a request id exactly as the caller wrote it answers its call: not
// one of another caller, nor one naming its sequence number otherwise
// (upper case, a leading zero, more after it), nor its prefix alone.
func TestOnlyTheExactRequestIDAnswersACall(t *testing.T) {
	k := newCaller("n1", 1, slog.New(slog.DiscardHandler))
	other := newCaller("n2", 1, slog.New(slog.DiscardHandler))
	k.seq.Store(10*36 + 35 - 1) // the next call's number, 10*36 + 35, is "az" in base 36
	k.SetLocal(func(_ int32, key, _ []byte) bool {
		_, rid, _ := ReplyAddress(key)
		digits := string(rid[len(k.prefix):])
		for _, wrong := range []string{
			other.prefix + digits, k.prefix + strings.ToUpper(digits), k.prefix + "0" + digits,
			k.prefix + digits + "0", k.prefix, k.prefix + "zzzzzzzzzzzzzzzzzzzz",
		} {
			k.Deliver([]byte(wrong), []byte(wrong))
		}
		k.Deliver(rid, []byte("right"))
		return true
	})
	got, err := k.Call(context.Background(), 0, []byte("c"), Writes)
	if err != nil || string(got) != "right" {
		t.Fatalf("got %q, %v; want the reply to the exact request id", got, err)
	}
}
