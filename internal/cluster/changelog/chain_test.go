package changelog

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// chainCluster is a kfake cluster with c's topics.
func chainCluster(t *testing.T) (context.Context, kafkalog.Config) {
	t.Helper()
	kc, err := kfake.NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c := kafkalog.Config{Brokers: kc.ListenAddrs(), Cluster: "chain", Partitions: 1}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafkalog.EnsureTopics(ctx, cl, c); err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

// chainOwner is an Owner of c's changelog whose repairs find no key.
func chainOwner(t *testing.T, c kafkalog.Config) *kafkalog.Owner {
	t.Helper()
	w, err := kafkalog.NewWriter(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return kafkalog.NewOwner(w, c, func(_ int32, key []byte) ([]kafkalog.Update, error) {
		return []kafkalog.Update{{Key: key}}, nil
	})
}

// takeInto takes partition 0 for o, restoring it through s, loads its
// copy into a fresh cache, and returns the cache, where the take read from, and the
// changes it read.
func takeInto(t *testing.T, ctx context.Context, s *Snapshots, o *kafkalog.Owner, member string) (*store.Store, kafkalog.ChainState, int64) {
	t.Helper()
	cache, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	read := s.Read()
	from, r, err := s.RestoreChain(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tk, err := o.Take(ctx, 0, from, kafkalog.Claim{Generation: 1, Member: member}, r.Apply)
	if err != nil || tk.First.Result != kafkalog.Counted {
		t.Fatalf("%s's take: %+v, %v", member, tk.First, err)
	}
	st, _ := o.State(0)
	if err := r.Done(tk, st); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(cache, []int32{0}); err != nil {
		t.Fatal(err)
	}
	return cache, from, s.Read() - read
}

// A copy keeps, with the offset a round's write moves it to, the chain
// state there: a later take restores from it, reading none of the
// changes the copy holds, and goes on from the trailer the copy kept,
// owing the forwards it owed, whose records lie below the offset. A
// copy without a chain state (kept by transactional rounds) is read again
// from the changelog's start.
func TestCopyKeepsTheChainState(t *testing.T) {
	ctx, c := chainCluster(t)
	s, err := OpenSnapshots(t.TempDir(), c, slog.New(slog.DiscardHandler), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := chainOwner(t, c)
	if _, from, _ := takeInto(t, ctx, s, a, "a"); from.Offset != 0 || from.Last != nil {
		t.Fatalf("a's take read from %+v, want the start", from)
	}
	set := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte("k"), Value: []byte{opSet, 'v'}}
	book, _ := a.Book(0)
	book.Owe(1, []byte("f"), []byte("credit"))
	out, err := a.Round(ctx, []kafkalog.Batch{{Partition: 0, Commands: 7, Updates: []kafkalog.Update{{Key: set.Key, Value: set.Value}}, Book: &book}})
	if err != nil || out[0].Result != kafkalog.Counted {
		t.Fatalf("a's round: %+v, %v", out, err)
	}
	st, _ := a.State(0)
	if err := s.CommitChain([]kafkalog.Output{set}, map[int32]kafkalog.ChainState{0: st}); err != nil {
		t.Fatal(err)
	}
	m, _, err := s.meta(0)
	if err != nil || m.Chain == nil || m.Offset != st.Offset || m.Chain.Epoch != st.Epoch || m.Chain.Commands() != 7 {
		t.Fatalf("the copy's meta %+v (chain %+v), want the owner's state %+v", m, m.Chain, st)
	}

	b := chainOwner(t, c)
	cache, from, read := takeInto(t, ctx, s, b, "b")
	if from.Offset != st.Offset || read != 0 {
		t.Fatalf("b's take read %d changes from %+v, want none from the copy's %+v", read, from, st)
	}
	if v, ok, _ := cache.Get([]byte("k")); !ok || string(v) != "v" {
		t.Fatalf("b's cache holds k=%q (%v), want the copy's v", v, ok)
	}
	if at, _ := b.Commands(0); at != 7 {
		t.Fatalf("b reads the commands from %d, want the trailer's 7", at)
	}
	if bb, _ := b.Book(0); len(bb.Owed()) != 1 || string(bb.Owed()[0].Value) != "credit" {
		t.Fatalf("b owes %+v, want the copy's forward of credit", bb.Owed())
	}

	m, _, _ = s.meta(0)
	m.Chain = nil
	batch := s.db.NewBatch()
	if err := setMeta(batch, 0, m); err != nil {
		t.Fatal(err)
	}
	if err := s.db.CommitNoSync(batch); err != nil {
		t.Fatal(err)
	}
	if _, from, read := takeInto(t, ctx, s, chainOwner(t, c), "c"); from.Offset != 0 || read != 1 {
		t.Fatalf("a take from a copy without a chain state read %d changes from %+v, want 1 from the start", read, from)
	}
}
