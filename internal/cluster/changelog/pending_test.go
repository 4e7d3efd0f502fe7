package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// openRestored opens a copy in dir whose partitions 0 to n-1 have a meta,
// as a take's restore leaves them, so that counted rounds move them.
func openRestored(t testing.TB, dir string, n int32) *Snapshots {
	t.Helper()
	s, err := OpenSnapshots(dir, kafkalog.Config{}, slog.New(slog.DiscardHandler), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.db.NewBatch()
	for p := range n {
		st := kafkalog.LogStart()
		if err := setMeta(b, p, kafkalog.Snapshot{Chain: &st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	return s
}

// countRound commits a counted round of partition 0 setting key to value,
// which moves its copy to offset.
func countRound(t *testing.T, s *Snapshots, key, value string, offset int64) {
	t.Helper()
	out := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte(key), Value: append([]byte{opSet}, value...)}
	if err := s.CommitChain([]kafkalog.Output{out}, map[int32]kafkalog.ChainState{0: {Offset: offset}}); err != nil {
		t.Fatal(err)
	}
}

// Every reader of the copy sees the counted rounds still in the pending
// batch: what the copy covers, the repairs' Restate, and the cache's load.
func TestReadersSeeThePendingRounds(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		read       func(*Snapshots) (string, error)
	}{
		{"meta", "5", func(s *Snapshots) (string, error) {
			m, _, err := s.meta(0)
			return fmt.Sprint(m.Offset), err
		}},
		{"Restate", "[k=s1]", func(s *Snapshots) (string, error) {
			ups, err := s.Restate(0, []byte("k"))
			return updatesString(ups), err
		}},
		{"Load", "1", func(s *Snapshots) (string, error) {
			cache, err := store.Open(filepath.Join(s.db.Dir(), "..", "cache"), store.Options{NoWAL: true})
			if err != nil {
				return "", err
			}
			defer cache.Close()
			if err := s.Load(cache, []int32{0}); err != nil {
				return "", err
			}
			v, _, err := cache.Get([]byte("k"))
			return string(v), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openRestored(t, t.TempDir(), 1)
			defer s.Close()
			countRound(t, s, "k", "1", 5)
			if s.pending == nil {
				t.Fatal("a small round is not pending")
			}
			got, err := tc.read(s)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("%s reads %s after a counted round, want %s", tc.name, got, tc.want)
			}
		})
	}
}

// A kill -9 leaves the copy as its last flush wrote it: the rounds
// committed and flushed, with the metas they moved; neither the changes
// nor the metas of the rounds committed since (the copy keeps no WAL) nor
// of the pending ones.
func TestUncommittedRoundsLeaveTheLastFlushedState(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := OpenSnapshots("/node", kafkalog.Config{}, slog.New(slog.DiscardHandler), SnapshotOptions{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	restoreParts(t, s, 1)
	s.commitAt = 1 // each round is committed at once
	countRound(t, s, "a", "1", 5)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	countRound(t, s, "b", "2", 7)
	s.commitAt = 1 << 30
	countRound(t, s, "a", "3", 9)
	if s.pending == nil {
		t.Fatal("no round is pending")
	}
	killed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))}) // every write the process made

	k, err := OpenSnapshots("/node", kafkalog.Config{}, slog.New(slog.DiscardHandler), SnapshotOptions{FS: killed})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	m, ok, err := k.meta(0)
	if err != nil || !ok || m.Offset != 5 || m.Chain == nil || m.Chain.Offset != 5 {
		t.Fatalf("the copy covers %+v (%v, %v), want offset 5 with its chain state", m, ok, err)
	}
	for key, want := range map[string]string{"a": "[a=s1]", "b": "[b=<nil>]"} {
		if ups, err := k.Restate(0, []byte(key)); err != nil || updatesString(ups) != want {
			t.Errorf("the copy holds %s (%v), want %s", updatesString(ups), err, want)
		}
	}
}

// The pending rounds' metas are written once, each partition's last, when
// the pending batch is committed: the batch holds only the rounds'
// changes until then, and the copy then covers the last round's position
// with its chain state, the forwards its book owes included.
func TestPendingMetasAreWrittenAtCommit(t *testing.T) {
	dir := t.TempDir()
	s := openRestored(t, dir, 2)
	s.commitAt = 1 << 30
	var book kafkalog.Book
	book.Owe(1, []byte("f"), []byte("credit"))
	for i := range int64(3) {
		outs := []kafkalog.Output{
			{Kind: kafkalog.Change, Partition: 0, Key: []byte("a"), Value: []byte{opSet, byte('0' + i)}},
			{Kind: kafkalog.Change, Partition: 1, Key: []byte("b"), Value: []byte{opSet, byte('0' + i)}},
		}
		states := map[int32]kafkalog.ChainState{
			0: {Offset: 10 + i, Last: &kafkalog.Trailer{Commands: i, Book: book.Clone()}},
			1: {Offset: 20 + i},
		}
		if err := s.CommitChain(outs, states); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.pending.Count(); n != 6 {
		t.Fatalf("the pending batch holds %d records after 3 rounds of 2 changes, want the 6 changes alone", n)
	}
	s.Close()

	s, err := OpenSnapshots(dir, kafkalog.Config{}, slog.New(slog.DiscardHandler), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, ok, err := s.storedMeta(0)
	if err != nil || !ok || m.Offset != 12 || m.Chain == nil || m.Chain.Commands() != 2 {
		t.Fatalf("partition 0's copy covers %+v (%v, %v), want offset 12 and the last round's trailer", m, ok, err)
	}
	if book := m.Chain.Book(); len(book.Owed()) != 1 || string(book.Owed()[0].Value) != "credit" {
		t.Fatalf("partition 0's copy owes %+v, want the forward of credit", book.Owed())
	}
	if m, ok, err := s.storedMeta(1); err != nil || !ok || m.Offset != 22 {
		t.Fatalf("partition 1's copy covers %+v (%v, %v), want offset 22", m, ok, err)
	}
}

// A round that cannot be added to the pending batch drops the pending
// rounds with their metas: the copy stays at its last committed state,
// which its readers see, and no later round moves it on past the rounds
// lost; a load into the engine's cache, which would take that state for
// the current one, fails.
func TestFailedRoundDropsThePendingMetas(t *testing.T) {
	s := openRestored(t, t.TempDir(), 1)
	defer s.Close()
	s.commitAt = 1 << 30
	countRound(t, s, "a", "1", 5)
	bad := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte("b"), Value: []byte{'?'}}
	if err := s.CommitChain([]kafkalog.Output{bad}, map[int32]kafkalog.ChainState{0: {Offset: 7}}); err == nil {
		t.Fatal("a record of unknown kind was taken")
	}
	out := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte("c"), Value: []byte{opSet, '3'}}
	if err := s.CommitChain([]kafkalog.Output{out}, map[int32]kafkalog.ChainState{0: {Offset: 9}}); err == nil {
		t.Fatal("a round after lost rounds was taken")
	}
	m, ok, err := s.meta(0)
	if err != nil || !ok || m.Offset != 0 {
		t.Fatalf("the copy covers %+v (%v, %v), want the restore's offset 0", m, ok, err)
	}
	if ups, err := s.Restate(0, []byte("a")); err != nil || updatesString(ups) != "[a=<nil>]" {
		t.Fatalf("the copy holds %s (%v), want no a", updatesString(ups), err)
	}
	cache, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	if err := s.Load(cache, []int32{0}); !errors.Is(err, ErrLost) {
		t.Fatalf("loading the copy that lost counted rounds: %v, want %v", err, ErrLost)
	}
}

// BenchmarkCommitChain commits rounds of 100 changes of random keys
// across 8 partitions, as a node's counted rounds, and reports the
// process's CPU per round (cpu-ns/op), Pebble's flushes and compactions
// included, up to the copy's close, the flush of its last memtable too. In owing, each partition's chain
// state owes forwards, as a partition of a node that forwards to others'
// does.
func BenchmarkCommitChain(b *testing.B) {
	for _, owed := range []int{0, 32} {
		name := "plain"
		if owed > 0 {
			name = "owing"
		}
		b.Run(name, func(b *testing.B) { benchCommitChain(b, owed) })
	}
}

func benchCommitChain(b *testing.B, owed int) {
	const parts, perRound = 8, 100
	s := openRestored(b, b.TempDir(), parts)
	rng := rand.New(rand.NewPCG(1, 2))
	outs := make([]kafkalog.Output, perRound)
	for i := range outs {
		outs[i] = kafkalog.Output{Kind: kafkalog.Change, Partition: int32(i % parts), Key: make([]byte, 24), Value: make([]byte, 1+96)}
		outs[i].Value[0] = opSet
	}
	var book kafkalog.Book
	for i := range owed {
		book.Owe(int32(i%parts), make([]byte, 24), make([]byte, 64))
	}
	states := map[int32]kafkalog.ChainState{}
	cpu0 := measure.ProcessCPU()
	b.ResetTimer()
	for i := range b.N {
		for j := range outs {
			binary.BigEndian.PutUint64(outs[j].Key, rng.Uint64N(1<<22))
		}
		for p := range int32(parts) {
			st := kafkalog.ChainState{Offset: int64(i + 1)}
			if owed > 0 {
				st.Last = &kafkalog.Trailer{Commands: int64(i), Book: book.Clone()}
			}
			states[p] = st
		}
		if err := s.CommitChain(outs, states); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.flush(); err != nil {
		b.Fatal(err)
	}
	if err := s.db.Flush(); err != nil { // what a copy with a WAL defers
		b.Fatal(err)
	}
	s.Close()
	b.StopTimer()
	b.ReportMetric(float64(measure.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
