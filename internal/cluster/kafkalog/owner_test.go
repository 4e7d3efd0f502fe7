package kafkalog

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// These tests run Owners against a real broker (kafkatest).

// shard is an owner's state of its partitions, as a node keeps it: what
// the restores gave and the rounds wrote.
type shard struct {
	mu   sync.Mutex
	keys map[int32]map[string]string
}

func newShard() *shard { return &shard{keys: map[int32]map[string]string{}} }

func (s *shard) set(p int32, k, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[p] == nil {
		s.keys[p] = map[string]string{}
	}
	if v == nil {
		delete(s.keys[p], string(k))
		return
	}
	s.keys[p][string(k)] = string(v)
}

func (s *shard) current(p int32, k []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.keys[p][string(k)]
	if !ok {
		return nil, nil
	}
	return []byte(v), nil
}

// restate restates key from s, whose keys are all of the shard's state.
func (s *shard) restate(p int32, key []byte) ([]Update, error) {
	v, err := s.current(p, key)
	return []Update{{Key: key, Value: v}}, err
}

func (s *shard) of(p int32) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.keys[p])
}

// newOwner is an Owner on a Writer of its own, over s.
func newOwner(t testing.TB, c Config, s *shard) *Owner {
	t.Helper()
	return NewOwner(newWriter(t, c), c, s.restate)
}

// take takes partition p for member, restoring it into s.
func take(t *testing.T, ctx context.Context, o *Owner, s *shard, p int32, from ChainState, member string) Taken {
	t.Helper()
	tk, err := o.Take(ctx, p, from, Claim{Generation: 1, Member: member}, func(k, v []byte) error {
		s.set(p, k, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tk.First.Result != Counted {
		t.Fatalf("the first write of %s: %+v", member, tk.First)
	}
	return tk
}

// round applies b's updates to s and writes b through o.
func round(t *testing.T, ctx context.Context, o *Owner, s *shard, b Batch) Outcome {
	t.Helper()
	for _, u := range b.Updates {
		s.set(b.Partition, u.Key, u.Value)
	}
	out, err := o.Round(ctx, []Batch{b})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// epochRecordAt reads the claim of the epoch record at offset e of p.
func epochRecordAt(t *testing.T, ctx context.Context, c Config, p int32, e Epoch) Claim {
	t.Helper()
	entries, _, _ := readChangelog(t, ctx, c, p)
	for _, en := range entries {
		if en.Offset == int64(e) && en.Kind == KindEpoch {
			return en.Claim
		}
	}
	t.Fatalf("no epoch record at %d", e)
	return Claim{}
}

// An owner takes a partition, writes rounds (one of reads only: a trailer
// alone) and keeps where the replay stands; a restart takes it again from
// that state or from the log's start, and restores the same state,
// position and book, restated in its epoch record.
func TestOwnerTakesAPartitionAndWritesRounds(t *testing.T) {
	ctx, c := newCluster(t, 2)
	s := newShard()
	a := newOwner(t, c, s)
	tk := take(t, ctx, a, s, 0, LogStart(), "a")
	if cmds, _ := a.Commands(0); cmds != -1 || epochRecordAt(t, ctx, c, 0, tk.Epoch).Restated != nil {
		t.Fatalf("a new changelog's position %d, epoch record %+v", cmds, epochRecordAt(t, ctx, c, 0, tk.Epoch))
	}
	var book Book
	book.Owe(1, []byte("f"), []byte("credit"))
	if o := round(t, ctx, a, s, Batch{Partition: 0, Updates: []Update{upd("k1", "1"), upd("k2", "1")}, Commands: 5, Book: &book}); o.Result != Counted {
		t.Fatalf("a's round: %+v", o)
	}
	if _, err := a.Round(ctx, []Batch{{Partition: 1}}); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("a round on a partition not taken: %v", err)
	}
	read := round(t, ctx, a, s, Batch{Partition: 0, Commands: 6, Book: &book})
	if read.Result != Counted || read.Written.End-read.Written.Base != 1 {
		t.Fatalf("a round of reads only: %+v", read)
	}
	st, ok := a.State(0)
	if !ok || st.Offset != read.Written.End || st.Epoch != tk.Epoch || st.Commands() != 6 {
		t.Fatalf("a's state %+v, want offset %d, epoch %d, commands 6", st, read.Written.End, tk.Epoch)
	}

	for name, from := range map[string]ChainState{"copy": st, "start": LogStart()} {
		s2 := newShard()
		if name == "copy" {
			s2.keys[0] = s.of(0)
		}
		b := newOwner(t, c, s2)
		tb := take(t, ctx, b, s2, 0, from, "b-"+name)
		restated := epochRecordAt(t, ctx, c, 0, tb.Epoch).Restated
		if restated == nil || restated.At != int64(tb.Epoch) || restated.Last.Commands != 6 {
			t.Fatalf("from the %s: the epoch record restates %+v, at %d", name, restated, tb.Epoch)
		}
		cmds, _ := b.Commands(0)
		nb, _ := b.Book(0)
		if want := map[string]string{"k1": "1", "k2": "1"}; !maps.Equal(s2.of(0), want) || cmds != 6 || len(nb.Owed()) != 1 {
			t.Fatalf("from the %s: restored %v, commands %d, owed %v", name, s2.of(0), cmds, nb.Owed())
		}
	}
	if o := round(t, ctx, a, s, Batch{Partition: 0, Commands: 7}); o.Result != Fenced {
		t.Fatalf("a's round after two other claims: %+v", o)
	}
	if _, ok := a.State(0); ok {
		t.Fatal("a still owns the partition after a fenced write")
	}
}

// An owner takes a partition while its previous owner keeps writing
// rounds: the previous owner's writes stop counting, and the new owner
// restores the state, position and book of the last write told counted.
func TestOwnerTakesOverFromAWritingOwner(t *testing.T) {
	ctx, c := newCluster(t, 1)
	sa, sb := newShard(), newShard()
	a, b := newOwner(t, c, sa), newOwner(t, c, sb)
	take(t, ctx, a, sa, 0, LogStart(), "a")
	var book Book
	var counted []int64
	round(t, ctx, a, sa, Batch{Partition: 0, Updates: []Update{upd("k", "0")}, Commands: 0, Book: &book})
	counted = append(counted, 0)
	done := make(chan error)
	go func() {
		for i := int64(1); ; i++ {
			book.Owe(1, nil, []byte{byte(i)})
			bk := book.Clone()
			sa.set(0, []byte("k"), []byte{byte('0' + i%10)})
			out, err := a.Round(ctx, []Batch{{Partition: 0, Updates: []Update{{Key: []byte("k"), Value: []byte{byte('0' + i%10)}}}, Commands: i, Book: &bk}})
			if err != nil || out[0].Result != Counted {
				if err == nil && out[0].Result != Fenced {
					err = out[0].Written.Err
				}
				done <- err
				return
			}
			counted = append(counted, i)
		}
	}()
	pollUntil(t, ctx, func() bool { st, _ := a.State(0); return st.Commands() >= 3 }, "a writes three rounds")
	take(t, ctx, b, sb, 0, LogStart(), "b")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last := counted[len(counted)-1]
	cmds, _ := b.Commands(0)
	nb, _ := b.Book(0)
	if cmds != last || len(nb.Owed()) != int(last) {
		t.Fatalf("b restored commands %d and %d forwards owed; a's last write that counted said %d", cmds, len(nb.Owed()), last)
	}
	if want := map[string]string{"k": string(rune('0' + last%10))}; !maps.Equal(sb.of(0), want) {
		t.Fatalf("b restored %v, want %v", sb.of(0), want)
	}
}

// pollUntil polls cond until it holds, or fails the test once ctx ends.
func pollUntil(t *testing.T, ctx context.Context, cond func() bool, what string) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polls the condition
		}
	}
}

// compactSoon makes the log cleaner compact c's changelog as soon as it
// can: a segment rolls at the first record 100 ms after it began, any
// share of records not yet cleaned is worth a cleaning, and no lag.
func compactSoon(t *testing.T, ctx context.Context, c Config) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, c))
	set := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.ms", Value: kadm.StringPtr("100")},
		{Op: kadm.SetConfig, Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr("0.01")},
		{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: kadm.StringPtr("0")},
	}
	resp, err := adm.AlterTopicConfigs(ctx, set, c.ChangelogTopic())
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(c.ChangelogTopic(), nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A zombie's records outlive, once compacted, the values that counted
// before them: its change of a key, and its late trailer, which replaces
// the last trailer its epoch wrote while in force. The new owner's repair
// of the keys it changed and its epoch record, which restates the trailer
// it restored, leave the compacted log restoring what counted.
func TestOwnerRepairsSurviveCompaction(t *testing.T) {
	ctx, c, sa, sb, a, b := compactingOwners(t)
	var book Book
	book.Owe(1, []byte("f"), []byte("credit"))
	valid := round(t, ctx, a, sa, Batch{Partition: 0, Updates: []Update{upd("k1", "a"), upd("k2", "a")}, Commands: 7, Book: &book})
	tb := take(t, ctx, b, sb, 0, LogStart(), "b")
	if o := round(t, ctx, a, sa, Batch{Partition: 0, Updates: []Update{upd("k1", "zombie"), upd("k3", "zombie")}, Commands: 9}); o.Result != Fenced {
		t.Fatalf("the zombie's write: %+v", o)
	}
	found := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 7, Book: &book})
	if !slices.Equal(keyStrings(found.Written.ForeignKeys), []string{"k1", "k3"}) {
		t.Fatalf("b's write after the zombie's found %q", keyStrings(found.Written.ForeignKeys))
	}
	repair := round(t, ctx, b, sb, Batch{Partition: 0, Commands: 7, Book: &book})
	if repair.Result != Counted || repair.Written.End-repair.Written.Base != 3 {
		t.Fatalf("b's repair: %+v", repair)
	}

	aTrailer := valid.Written.End - 1
	pollUntil(t, ctx, func() bool {
		round(t, ctx, b, sb, Batch{Partition: 0, Commands: 7, Book: &book}) // rolls a segment
		entries, _, _ := readChangelog(t, ctx, c, 0)
		return !slices.ContainsFunc(entries, func(e Entry) bool { return e.Offset == aTrailer })
	}, "compaction of a's trailer")

	_, upToB := restoreChain(t, ctx, c, 0, LogStart(), tb.Epoch)
	if bk := upToB.State.Book(); upToB.State.Commands() != 7 || len(bk.Owed()) != 1 {
		t.Fatalf("restored up to b's epoch record, compacted: %+v", upToB.State)
	}
	sc := newShard()
	take(t, ctx, newOwner(t, c, sc), sc, 0, LogStart(), "c")
	if want := map[string]string{"k1": "a", "k2": "a"}; !maps.Equal(sc.of(0), want) {
		t.Fatalf("c restored %v from the compacted log, want %v", sc.of(0), want)
	}
}
