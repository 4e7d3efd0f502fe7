package kafkalog

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// seqsOf lists forwards as their destinations and sequences.
func seqsOf(fs []Owed) [][2]uint64 {
	var out [][2]uint64
	for _, f := range fs {
		out = append(out, [2]uint64{uint64(f.Partition), f.Seq})
	}
	return out
}

func TestBookNumbersForwardsPerDestination(t *testing.T) {
	var b Book
	for _, to := range []int32{2, 5, 2, 2, 5} {
		b.Owe(to, nil, []byte("c"))
	}
	want := [][2]uint64{{2, 1}, {2, 2}, {2, 3}, {5, 1}, {5, 2}}
	if got := seqsOf(b.Owed()); !slices.Equal(got, want) {
		t.Fatalf("owed %v, want %v", got, want)
	}
}

func TestBookAcknowledgementDropsWhatWasApplied(t *testing.T) {
	var b Book
	for _, to := range []int32{2, 5, 2, 2, 5} {
		b.Owe(to, nil, nil)
	}
	for _, ack := range []uint64{2, 1, 0} { // then older ones: no change
		if err := b.Acknowledge(2, ack); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := seqsOf(b.Owed()), [][2]uint64{{2, 3}, {5, 1}, {5, 2}}; !slices.Equal(got, want) {
		t.Fatalf("owed %v, want %v", got, want)
	}
	if err := b.Acknowledge(5, 3); !errors.Is(err, ErrUnknownForward) {
		t.Fatalf("acknowledging a sequence never assigned: %v", err)
	}
	if err := b.Acknowledge(7, 1); !errors.Is(err, ErrUnknownForward) {
		t.Fatalf("acknowledging a partition never owed: %v", err)
	}
	if b.Owe(2, nil, nil).Seq != 4 {
		t.Fatal("an acknowledgement renumbered the forwards")
	}
}

// A Book's copies and the Book itself owe and acknowledge apart, though
// a copy shares the arrays its forwards were in: none sees another's
// forwards, whether they owe one after the other or each in a goroutine
// of its own, as a round's book and the Forwarder's copy do (run with
// -race).
func TestBookCopiesOweApart(t *testing.T) {
	var b Book
	for range 3 {
		b.Owe(1, nil, []byte("all"))
	}
	c := b.Clone()
	d := c.Clone()
	books := map[string]*Book{"b": &b, "c": &c, "d": &d}
	for _, name := range []string{"b", "c", "d"} {
		books[name].Owe(1, nil, []byte(name))
	}
	for name, book := range books {
		if owed := book.Owed(); len(owed) != 4 || string(owed[3].Value) != name {
			t.Errorf("book %s owes %v, its last %q", name, seqsOf(owed), owed[len(owed)-1].Value)
		}
	}

	b.Owe(1, nil, []byte("b")) // b's array has room past its length
	e := b.Clone()
	owe := func(book *Book, value string) []Owed {
		book.Owe(1, nil, []byte(value))
		if err := book.Acknowledge(1, 2); err != nil {
			t.Error(err)
		}
		book.Owe(1, nil, []byte(value))
		return book.Owed()
	}
	got := make(chan []Owed, 1)
	go func() { got <- owe(&e, "e") }()
	for name, owed := range map[string][]Owed{"b": owe(&b, "b"), "e": <-got} {
		want := [][2]uint64{{1, 3}, {1, 4}, {1, 5}, {1, 6}, {1, 7}}
		if !slices.Equal(seqsOf(owed), want) || string(owed[3].Value) != name || string(owed[4].Value) != name {
			t.Errorf("book %s owes %v, %q and %q last, want %v", name, seqsOf(owed), owed[3].Value, owed[4].Value, want)
		}
	}
}

// BenchmarkBookRound takes a partition's book through a round as a node
// does: the round's copy (Owner.Book) owes a forward to each of 4
// destinations, each acknowledges one, and the settled write's book is
// copied for the owner, the Forwarder and the local copy's state, with
// 32 forwards owed to each destination.
func BenchmarkBookRound(b *testing.B) {
	var last Book
	for i := range 4 * 32 {
		last.Owe(int32(i%4), make([]byte, 24), make([]byte, 64))
	}
	key, value := make([]byte, 24), make([]byte, 64)
	b.ReportAllocs()
	for range b.N {
		book := last.Clone()
		for to := range int32(4) {
			book.Owe(to, key, value)
			if err := book.Acknowledge(to, book.Acknowledged(to)+1); err != nil {
				b.Fatal(err)
			}
		}
		last = book.Clone()
		fwd, state := book.Clone(), last.Clone()
		_, _ = fwd, state
	}
}

func TestBookAcceptsOnlyTheNextInSequence(t *testing.T) {
	var b Book
	steps := []struct {
		from int32
		seq  uint64
		want Verdict
	}{
		{1, 2, EarlyForward},
		{1, 1, ApplyForward},
		{3, 1, ApplyForward}, // sequences are per source
		{1, 1, DuplicateForward},
		{1, 3, EarlyForward},
		{1, 2, ApplyForward},
		{1, 0, DuplicateForward},
	}
	for i, s := range steps {
		if got := b.Accept(s.from, s.seq); got != s.want {
			t.Fatalf("step %d: forward %d from %d judged %d, want %d", i, s.seq, s.from, got, s.want)
		}
	}
	if b.Applied(1) != 2 || b.Applied(3) != 1 || b.Applied(4) != 0 {
		t.Fatalf("applied %d, %d, %d", b.Applied(1), b.Applied(3), b.Applied(4))
	}
}

// A book restored from its partition's records, from the log or the log
// compacted, goes on as the one written: the same forwards owed, the same
// numbering, the same verdicts. Its trailer holds the counters alone.
func TestBookReadBackFromItsRecords(t *testing.T) {
	var b Book
	b.Owe(2, []byte("k1"), []byte("v1"))
	b.Owe(2, []byte("k2"), []byte("v2"))
	b.Owe(4, []byte("k3"), nil)
	b.Accept(6, 1)
	var l fwdLog
	e := Epoch(l.add(EpochRecord("t", 0, Claim{Nonce: 1})))
	write := func(next, last *Book) {
		for _, u := range next.forwardUpdates(last) {
			l.add(ChangeRecord("t", 0, e, u.Key, u.Value))
		}
		l.add(TrailerRecord("t", 0, Trailer{Epoch: e, Commands: 10, Book: *next}))
	}
	write(&b, &Book{})
	acked := b.Clone()
	if err := acked.Acknowledge(2, 1); err != nil {
		t.Fatal(err)
	}
	write(&acked, &b)
	if len(l.records) != 7 || l.records[5].Value != nil {
		t.Fatalf("wrote %d records, the sixth %q; want 3 forwards, a trailer, a tombstone, a trailer", len(l.records), l.records[5].Value)
	}
	for name, records := range map[string][]*kgo.Record{"log": l.records, "compacted log": compacted(l.records)} {
		st, _ := replayLog(t, LogStart(), records, map[string]string{})
		r := st.Book()
		if got, want := r.Owed(), acked.Owed(); len(got) != 2 || !slices.EqualFunc(got, want, sameOwed) {
			t.Fatalf("%s: owed read back %v, want %v", name, got, want)
		}
		if r.Owe(2, nil, nil).Seq != 3 || r.Owe(5, nil, nil).Seq != 1 {
			t.Fatalf("%s: the book read back numbers forwards anew", name)
		}
		if r.Accept(6, 1) != DuplicateForward || r.Accept(6, 2) != ApplyForward {
			t.Fatalf("%s: the book read back lost the sequences applied", name)
		}
	}
	many := acked.Clone()
	for range 1000 {
		many.Owe(2, []byte("k"), []byte("a forward as large as an atomic batch could be"))
	}
	if small, big := TrailerRecord("t", 0, Trailer{Book: acked}), TrailerRecord("t", 0, Trailer{Book: many}); len(big.Value) > len(small.Value)+1 {
		t.Fatalf("a trailer grew from %d to %d bytes with the forwards owed", len(small.Value), len(big.Value))
	}
}

func sameOwed(a, b Owed) bool {
	return a.Partition == b.Partition && a.Seq == b.Seq && string(a.Key) == string(b.Key) && string(a.Value) == string(b.Value)
}
