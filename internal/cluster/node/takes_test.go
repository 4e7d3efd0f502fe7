package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// A round that reads a command of a partition whose take the member has
// published, and the node not yet recorded (Taken), applies it only on a
// state loaded with the partition's copy: a read of an account there
// finds it, not a cache that lacks the partition. No command here owes
// another partition anything: a partition that applied forwards answers
// their sources when taken, before Taken, and a round that took that
// answer alone would wait in its write for the take to end, so that no
// round could read the command while the take is held.
func TestRoundAppliesNoCommandOfATakeNotRecorded(t *testing.T) {
	_, k := fakeKafka(t)
	logged := &seenLog{}
	a := startNode(t, k, t.TempDir(), func(c *Config) { c.Logger = slog.New(logged) })
	settled(t, a)
	const limit = 1000
	var ids []string
	for i := range 12 {
		id := fmt.Sprint("acc", i)
		if _, _, err := a.Ledger().CreateAccount(context.Background(), ledger.AccountSpec{ID: id, Currency: "USD", OverdraftLimit: limit}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	b := joinNode(t, k, a)
	moved, mp := "", int32(-1)
	for _, id := range ids {
		if p := int32(engine.ShardIndex(id, fakePartitions)); slices.Contains(b.Owned(), p) {
			moved, mp = id, p
			break
		}
	}
	if mp < 0 {
		t.Fatalf("b owns none of the accounts' partitions: %v", b.Owned())
	}
	held, release := make(chan struct{}), make(chan struct{})
	testHookTaken = func(p int32) {
		if p == mp {
			close(held)
			<-release
		}
	}
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	// Cleanups run last first: a failing test frees the take before the
	// nodes close, which would wait for it.
	t.Cleanup(func() { testHookTaken = nil; free() })
	a.drain()
	b.Close()
	<-held
	if !a.writes(mp) {
		t.Fatalf("a does not write %d while its take is recorded", mp)
	}
	queued := make(chan struct{}, 1)
	a.caller.SetLocal(func(p int32, key, value []byte) bool {
		ok := a.route(p, key, value)
		if p == mp {
			queued <- struct{}{}
		}
		return ok
	})
	t.Cleanup(func() { a.caller.SetLocal(a.route) })
	got := make(chan ledger.Account, 1)
	failed := make(chan error, 1)
	go func() {
		acc, err := a.Ledger().Account(context.Background(), moved)
		if err != nil {
			failed <- err
			return
		}
		got <- acc
	}()
	<-queued
	// A round takes the read, or a build waits for the take's record.
	until(t, func() bool { return a.local.len() == 0 || logged.saw("take is under way") },
		func() string { return "a round took the read, or a build waited" })
	free()
	select {
	case err := <-failed:
		t.Fatalf("read of %s on %d during its take: %v", moved, mp, err)
	case acc := <-got:
		if acc.ID != moved || acc.OverdraftLimit != limit {
			t.Fatalf("read of %s on %d during its take: %+v, want its overdraft limit %d", moved, mp, acc, limit)
		}
	}
}

// len is how many commands the queue holds.
func (q *localQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.cmds)
}

// seenLog is a slog.Handler keeping every record's message and attributes.
type seenLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *seenLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *seenLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *seenLog) WithGroup(string) slog.Handler            { return l }

func (l *seenLog) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// saw reports whether a record held s.
func (l *seenLog) saw(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}
