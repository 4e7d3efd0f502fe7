package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests run the Writer against a real broker (kafkatest): what they
// check is what the broker does with the batches.

func newWriter(t testing.TB, c Config) *Writer {
	t.Helper()
	w, err := NewWriter(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func claimOn(t *testing.T, ctx context.Context, w *Writer, p int32, member string) Epoch {
	t.Helper()
	e, err := w.Claim(ctx, p, Claim{Generation: 1, Member: member})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// batchOf is a batch to partition p of n updates "tag-i" = tag.
func batchOf(p int32, tag string, n int) Batch {
	b := Batch{Partition: p, Commands: int64(n)}
	for i := range n {
		b.Updates = append(b.Updates, Update{Key: []byte(tag + "-" + strconv.Itoa(i)), Value: []byte(tag)})
	}
	return b
}

func writeRound(t *testing.T, ctx context.Context, w *Writer, batches ...Batch) []Written {
	t.Helper()
	out, err := w.Write(ctx, batches)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	return out
}

// fetchBatches counts the records of each record batch a consumer reads.
type fetchBatches struct {
	mu    sync.Mutex
	sizes []int
}

func (f *fetchBatches) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes = append(f.sizes, m.NumRecords)
}

// readChangelog reads partition p of the changelog from its start to its end
// now, and returns its entries, whether each counts, and the number of
// records of each record batch.
func readChangelog(t *testing.T, ctx context.Context, c Config, p int32) (entries []Entry, counts []bool, batches []int) {
	t.Helper()
	end, err := listOffset(ctx, kadm.NewClient(newClient(t, c)).ListEndOffsets, c.ChangelogTopic(), p)
	if err != nil {
		t.Fatal(err)
	}
	f := &fetchBatches{}
	chain := NewChain(NoEpoch, Term{})
	err = readRange(ctx, c, c.ChangelogTopic(), p, 0, end, false, func(r *kgo.Record) error {
		e, err := ReadEntry(r)
		entries, counts = append(entries, e), append(counts, chain.Counts(e))
		return err
	}, []kgo.Opt{kgo.WithHooks(f)})
	if err != nil {
		t.Fatal(err)
	}
	return entries, counts, f.sizes
}

// countedKeys are the keys of the changes that count, "key=value".
func countedKeys(entries []Entry, counts []bool) []string {
	var out []string
	for i, e := range entries {
		if e.Kind == KindChange && counts[i] {
			out = append(out, string(e.Key)+"="+string(e.Value))
		}
	}
	return out
}

func keysOf(batches ...Batch) []string {
	var out []string
	for _, b := range batches {
		for _, u := range b.Updates {
			out = append(out, string(u.Key)+"="+string(u.Value))
		}
	}
	return out
}

func TestWriterOwnersWritesAreValid(t *testing.T) {
	ctx, c := newCluster(t, 2)
	w := newWriter(t, c)
	ends := map[int32]int64{}
	for p := range c.Partitions {
		ends[p] = int64(claimOn(t, ctx, w, p, "a")) + 1
	}
	var all [2][]Batch
	for round := range 3 {
		batches := []Batch{batchOf(0, fmt.Sprint("r", round, "p0"), 1+round), batchOf(1, fmt.Sprint("r", round, "p1"), 2)}
		for _, o := range writeRound(t, ctx, w, batches...) {
			if !o.Valid || o.Base != ends[o.Partition] || o.Foreign != o.Base {
				t.Fatalf("round %d: %+v, the writer's previous end %d", round, o, ends[o.Partition])
			}
			ends[o.Partition] = o.End
		}
		all[0], all[1] = append(all[0], batches[0]), append(all[1], batches[1])
	}
	for p := range c.Partitions {
		entries, counts, sizes := readChangelog(t, ctx, c, p)
		if got, want := countedKeys(entries, counts), keysOf(all[p]...); !slices.Equal(got, want) {
			t.Fatalf("partition %d counts %q, the owner wrote %q", p, got, want)
		}
		last := entries[len(entries)-1]
		if !counts[len(counts)-1] || last.Kind != KindTrailer || last.Trailer.Commands != all[p][2].Commands {
			t.Fatalf("partition %d ends with %+v", p, last)
		}
		want := []int{1}
		for _, b := range all[p] {
			want = append(want, len(b.Updates)+1)
		}
		if !slices.Equal(sizes, want) {
			t.Fatalf("partition %d's record batches hold %v records, want %v (the claim, then one per round)", p, sizes, want)
		}
	}
}

func TestWriterFencesAZombie(t *testing.T) {
	ctx, c := newCluster(t, 1)
	a, b := newWriter(t, c), newWriter(t, c)
	claimOn(t, ctx, a, 0, "a")
	before := batchOf(0, "a-before", 2)
	writeRound(t, ctx, a, before)
	eb := claimOn(t, ctx, b, 0, "b")
	zombie := writeRound(t, ctx, a, batchOf(0, "a-zombie", 2))[0]
	if zombie.Valid {
		t.Fatalf("a zombie's write after b's claim at %d was told valid: %+v", eb, zombie)
	}
	if _, ok := a.Epoch(0); ok {
		t.Fatal("the zombie's writer still writes the partition")
	}
	if _, err := a.Write(ctx, []Batch{batchOf(0, "a-again", 1)}); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("a fenced writer's next write: %v", err)
	}
	owner := batchOf(0, "b", 1)
	got := writeRound(t, ctx, b, owner)[0]
	if !got.Valid || got.Foreign != int64(eb)+1 || got.Base != zombie.End {
		t.Fatalf("the owner's write after the zombie's (%d to %d): %+v", zombie.Base, zombie.End, got)
	}
	if keys := keyStrings(got.ForeignKeys); !slices.Equal(keys, []string{"a-zombie-0", "a-zombie-1"}) {
		t.Fatalf("the owner's write after the zombie's found foreign keys %q", keys)
	}
	if next := writeRound(t, ctx, b, batchOf(0, "b2", 1))[0]; !next.Valid || next.Foreign != next.Base || next.ForeignKeys != nil {
		t.Fatalf("the owner's next write: %+v", next)
	}
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	if got, want := countedKeys(entries, counts), keysOf(before, owner, batchOf(0, "b2", 1)); !slices.Equal(got, want) {
		t.Fatalf("the changelog counts %q, want %q", got, want)
	}
}

// A round's batch is one record batch however many records it holds: more
// than franz-go buffers by default (50,000 records), and MiBs of them.
func TestWriterSendsEachPartitionsBatchWhole(t *testing.T) {
	ctx, c := newCluster(t, 2)
	w := newWriter(t, c)
	const n = 30000
	value := make([]byte, 100)
	batches := []Batch{batchOf(0, "big0", n), batchOf(1, "big1", n)}
	for _, b := range batches {
		claimOn(t, ctx, w, b.Partition, "a")
		for i := range b.Updates {
			b.Updates[i].Value = value
		}
	}
	for _, o := range writeRound(t, ctx, w, batches...) {
		if !o.Valid || o.End-o.Base != n+1 {
			t.Fatalf("%+v", o)
		}
	}
	for p := range c.Partitions {
		if _, counts, sizes := readChangelog(t, ctx, c, p); !slices.Equal(sizes, []int{1, n + 1}) || !counts[len(counts)-1] {
			t.Fatalf("partition %d's record batches hold %v records, want [1 %d]", p, sizes, n+1)
		}
	}
}

func TestWriterRefusesARoundTooLarge(t *testing.T) {
	ctx, c := newCluster(t, 2)
	w := newWriter(t, c)
	claimOn(t, ctx, w, 0, "a")
	claimOn(t, ctx, w, 1, "a")
	huge := Batch{Partition: 1, Updates: []Update{{Key: []byte("k"), Value: make([]byte, MaxRecordBytes-64)}}}
	if _, err := w.Write(ctx, []Batch{batchOf(0, "small", 1), huge}); !errors.Is(err, ErrRoundTooLarge) {
		t.Fatalf("a round over one record batch: %v", err)
	}
	for p := range c.Partitions {
		if entries, _, _ := readChangelog(t, ctx, c, p); len(entries) != 1 {
			t.Fatalf("partition %d holds %d records after a refused round, want its epoch record", p, len(entries))
		}
	}
	if o := writeRound(t, ctx, w, batchOf(1, "next", 1))[0]; !o.Valid || o.Base != 1 {
		t.Fatalf("the write after a refused round: %+v", o)
	}
}

// Two owners claim one after the other before the first writes: the first
// never owned the partition in the log, and its write is fenced.
func TestWriterTwoQuickClaims(t *testing.T) {
	ctx, c := newCluster(t, 1)
	b, cw := newWriter(t, c), newWriter(t, c)
	claimOn(t, ctx, b, 0, "b")
	ec := claimOn(t, ctx, cw, 0, "c")
	if o := writeRound(t, ctx, b, batchOf(0, "b", 1))[0]; o.Valid {
		t.Fatalf("b's write after c's claim at %d: %+v", ec, o)
	}
	owner := batchOf(0, "c", 1)
	if o := writeRound(t, ctx, cw, owner)[0]; !o.Valid || o.Foreign != int64(ec)+1 || !slices.Equal(keyStrings(o.ForeignKeys), []string{"b-0"}) {
		t.Fatalf("c's write after b's: %+v", o)
	}
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	if got, want := countedKeys(entries, counts), keysOf(owner); !slices.Equal(got, want) {
		t.Fatalf("the changelog counts %q, want %q", got, want)
	}
}
