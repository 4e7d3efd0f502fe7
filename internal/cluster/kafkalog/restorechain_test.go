package kafkalog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests restore partitions a real broker holds (kafkatest).

// restoreChain runs RestoreChain and returns the changes it gave, as
// "key=value", and what it returned.
func restoreChain(t *testing.T, ctx context.Context, c Config, p int32, from ChainState, owner Epoch) ([]string, Restored) {
	t.Helper()
	var changes []string
	r, err := RestoreChain(ctx, c, p, from, owner, func(k, v []byte) error {
		changes = append(changes, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return changes, r
}

func keyStrings(keys [][]byte) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, string(k))
	}
	return out
}

// upd is an update of key to value.
func upd(key, value string) Update { return Update{Key: []byte(key), Value: []byte(value)} }

// A new owner restores what counts up to its epoch record: the changes,
// position and book of the last owner's write, not those of that owner's
// write after the epoch record (a zombie's, which the new owner's Writer
// finds in its gap and repairs). The next owner restores the zombie's
// write as foreign, from the first owner's copy or from the log's start,
// and only the key the repair did not write again. Forward records are
// restored into the book, the zombie's record of the same forward left out
// and, once written again by the repair, no longer foreign.
func TestRestoreChainLeavesAZombiesWritesOut(t *testing.T) {
	ctx, c := newCluster(t, 1)
	a, b, cw := newWriter(t, c), newWriter(t, c), newWriter(t, c)
	claimOn(t, ctx, a, 0, "a")
	var book Book
	book.Owe(1, []byte("f"), []byte("credit"))
	book.Accept(2, 1)
	ups := append([]Update{upd("k1", "a"), upd("k2", "a")}, book.forwardUpdates(&Book{})...)
	writeRound(t, ctx, a, Batch{Partition: 0, Updates: ups, Commands: 7, Book: &book})
	eb := claimOn(t, ctx, b, 0, "b")
	var zombieBook Book
	zombieBook.Owe(1, []byte("g"), []byte("zombie"))
	ups = append([]Update{upd("k1", "zombie"), upd("k3", "zombie")}, zombieBook.forwardUpdates(&Book{})...)
	if o := writeRound(t, ctx, a, Batch{Partition: 0, Updates: ups, Commands: 9, Book: &zombieBook})[0]; o.Valid {
		t.Fatalf("the zombie's write was told valid: %+v", o)
	}

	changes, rb := restoreChain(t, ctx, c, 0, LogStart(), eb)
	if want := []string{"k1=a", "k2=a"}; !slices.Equal(changes, want) {
		t.Fatalf("restored %q, want %q", changes, want)
	}
	if s := rb.State; s.Offset != int64(eb)+1 || s.Epoch != eb || rb.Snapshot.Offset != s.Offset || s.Commands() != 7 {
		t.Fatalf("restored up to %+v, snapshot %+v; want offset %d, epoch %d, commands 7", s, rb.Snapshot, eb+1, eb)
	}
	if owed := rb.State.Last.Book.Owed(); len(owed) != 1 || string(owed[0].Value) != "credit" || rb.State.Last.Book.Applied(2) != 1 {
		t.Fatalf("restored the book owing %v, applied from 2 %d", owed, rb.State.Last.Book.Applied(2))
	}
	if len(rb.Foreign) != 0 {
		t.Fatalf("foreign keys %q before the owner's epoch record, want none", keyStrings(rb.Foreign))
	}

	restored := rb.State.Book()
	repair := restored.Clone()
	repair.Owe(3, nil, []byte("after the restore"))
	if len(rb.State.Last.Book.Owed()) != 1 {
		t.Fatal("a forward owed after the restore changed the restored state's book")
	}
	fk := forwardKey(1, 1)
	ups = append([]Update{upd("k1", "a"), {Key: fk, Value: restored.forwardValue(forwardID{to: 1, seq: 1})}}, repair.forwardUpdates(&restored)...)
	o := writeRound(t, ctx, b, Batch{Partition: 0, Updates: ups, Commands: 7, Book: &repair})[0]
	if want := []string{"k1", "k3", string(fk)}; o.Foreign != int64(eb)+1 || !slices.Equal(keyStrings(o.ForeignKeys), want) {
		t.Fatalf("the owner's repair: %+v", o)
	}
	ec := claimOn(t, ctx, cw, 0, "c")
	changes, rc := restoreChain(t, ctx, c, 0, rb.State, ec)
	if next := rc.State.Book(); !slices.Equal(changes, []string{"k1=a"}) || !slices.Equal(keyStrings(rc.Foreign), []string{"k3"}) ||
		rc.State.Commands() != 7 || len(next.Owed()) != 2 {
		t.Fatalf("restored from the copy's state: %q, %+v", changes, rc)
	}
	changes, r0 := restoreChain(t, ctx, c, 0, LogStart(), ec)
	if !slices.Equal(changes, []string{"k1=a", "k2=a", "k1=a"}) || !slices.Equal(keyStrings(r0.Foreign), []string{"k3"}) {
		t.Fatalf("restored from the start: %q, foreign %q", changes, keyStrings(r0.Foreign))
	}
	if _, err := RestoreChain(ctx, c, 0, LogStart(), ec-1, func(_, _ []byte) error { return nil }); !errors.Is(err, ErrNotAnEpoch) {
		t.Fatalf("a restore up to a trailer: %v", err)
	}
}

// A changelog transactional rounds wrote: its committed changes count up
// to the first owner's epoch record, its aborted ones never, and no
// trailer says where the commands stand (the group's offsets do).
func TestRestoreChainReadsATransactionalChangelog(t *testing.T) {
	ctx, c := newCluster(t, 1)
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.TransactionalID(c.Cluster+"-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for value, end := range map[string]kgo.TransactionEndTry{"committed": kgo.TryCommit, "aborted": kgo.TryAbort} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: c.ChangelogTopic(), Key: []byte("k"), Value: []byte(value)}
		if err := txn.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	e := claimOn(t, ctx, newWriter(t, c), 0, "a")
	changes, r := restoreChain(t, ctx, c, 0, LogStart(), e)
	if !slices.Equal(changes, []string{"k=committed"}) || r.State.Last != nil || r.State.Commands() != -1 {
		t.Fatalf("restored %q, up to %+v", changes, r.State)
	}
}
