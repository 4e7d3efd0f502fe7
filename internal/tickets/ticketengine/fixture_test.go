package ticketengine

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
)

var ctx = context.Background()

// fixture is ticketing and the ledger it takes payments through, on one
// engine.
type fixture struct {
	*Tickets
	led *ledgerengine.Ledger
	eng *engine.Engine
}

// testConfig sets up a fixture's engine.
type testConfig = engine.Config

func openEngine(t testing.TB, cfg testConfig) *fixture {
	t.Helper()
	return openEngineWith(t, cfg, Config{})
}

// openEngineWith opens a fixture whose ticketing has tc.
func openEngineWith(t testing.TB, cfg testConfig, tc Config) *fixture {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	eng, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	led, err := ledgerengine.Open(eng, ledgerengine.Config{Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(led.Close)
	tc.Logger = cfg.Logger
	tk, err := Open(eng, led, tc)
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	if err := led.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &fixture{Tickets: tk, led: led, eng: eng}
}

func closeEngine(t testing.TB, e *fixture) {
	t.Helper()
	e.led.Close()
	if err := e.eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// parkEngine holds the engine in a round until the returned func runs
// (also at cleanup): commands queued meanwhile wait in their logs.
func parkEngine(t testing.TB, e *fixture) func() {
	t.Helper()
	parked, release := make(chan struct{}), make(chan struct{})
	if _, err := e.port.Exclusive(ctx, func(time.Time) { close(parked); <-release }); err != nil {
		t.Fatal(err)
	}
	<-parked
	f := sync.OnceFunc(func() { close(release) })
	t.Cleanup(f)
	return f
}

func mustOpenAccount(t testing.TB, e *fixture, id string) {
	t.Helper()
	if _, _, err := e.led.CreateAccount(ctx, ledger.AccountSpec{ID: id, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
}

func mustTransfer(t testing.TB, e *fixture, req ledger.TransferRequest) {
	t.Helper()
	if _, _, err := e.led.Transfer(ctx, req); err != nil {
		t.Fatal(err)
	}
}

// wantBalance checks an account's balance and pending sum.
func wantBalance(t testing.TB, e *fixture, id string, bal, pending int64) {
	t.Helper()
	a, err := e.led.Account(ctx, id)
	if err != nil || a.Balance != bal || a.Pending != pending {
		t.Fatalf("%s: %+v (%v), want balance %d pending %d", id, a, err, bal, pending)
	}
}

// wantBalanced checks that money was neither created nor lost.
func wantBalanced(t testing.TB, e *fixture) {
	t.Helper()
	st, _ := e.led.Stats(ctx)
	for cur, sum := range st.BalanceSum {
		if sum != 0 {
			t.Fatalf("%s sums to %d", cur, sum)
		}
	}
}

// waitFor polls cond until it holds; only for conditions that depend on
// the clock (hold expiry), with a deadline far beyond the expected wait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}
