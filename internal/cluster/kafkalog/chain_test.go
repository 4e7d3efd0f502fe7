package kafkalog

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// testLog builds a changelog partition in memory, one record at a time, as
// the broker would number them.
type testLog struct {
	records []*kgo.Record
	nonce   uint64
}

func (l *testLog) add(r *kgo.Record) int64 {
	r.Offset = int64(len(l.records))
	l.records = append(l.records, r)
	return r.Offset
}

// claim appends an epoch record and returns its epoch.
func (l *testLog) claim(member string) Epoch {
	l.nonce++
	return Epoch(l.add(EpochRecord("t", 0, Claim{Generation: 1, Member: member, Nonce: l.nonce})))
}

// claimRestating appends an epoch record of term restating the position
// in the commands a restore read up to offset at found, and returns its
// epoch.
func (l *testLog) claimRestating(member string, term Term, at, commands int64) Epoch {
	l.nonce++
	c := Claim{Generation: term.Generation, Era: term.Era, Member: member, Nonce: l.nonce, Restated: &Restated{At: at, Last: Trailer{Commands: commands}}}
	return Epoch(l.add(EpochRecord("t", 0, c)))
}

// change appends a change of key to value under epoch e.
func (l *testLog) change(e Epoch, key, value string) {
	l.add(ChangeRecord("t", 0, e, []byte(key), []byte(value)))
}

// batch appends changes, each "key=value", and a trailer under epoch e.
func (l *testLog) batch(e Epoch, changes ...string) {
	for _, kv := range changes {
		k, v, _ := bytes.Cut([]byte(kv), []byte("="))
		l.change(e, string(k), string(v))
	}
	l.add(TrailerRecord("t", 0, Trailer{Epoch: e, Commands: int64(len(l.records))}))
}

// counted replays records from the start and returns what counts, as
// "epoch@offset", "key=value" and "trailer@offset".
func counted(t *testing.T, records []*kgo.Record) []string {
	t.Helper()
	c := NewChain(NoEpoch, Term{})
	var s []string
	for _, r := range records {
		e, err := ReadEntry(r)
		if err != nil {
			t.Fatalf("record %d: %v", r.Offset, err)
		}
		if !c.Counts(e) {
			continue
		}
		switch e.Kind {
		case KindEpoch:
			s = append(s, "epoch@"+strconv.FormatInt(e.Offset, 10))
		case KindChange:
			s = append(s, string(e.Key)+"="+string(e.Value))
		case KindTrailer:
			s = append(s, "trailer@"+strconv.FormatInt(e.Offset, 10))
		}
	}
	return s
}

// compacted keeps the last record of each key, as a log the cleaner went
// through whole.
func compacted(records []*kgo.Record) []*kgo.Record {
	return compactedIf(records, func(*kgo.Record) bool { return true })
}

// compactedIf keeps every record but those of which cleaned holds and a
// later record has the key.
func compactedIf(records []*kgo.Record, cleaned func(*kgo.Record) bool) []*kgo.Record {
	last := map[string]int64{}
	for _, r := range records {
		last[string(r.Key)] = r.Offset
	}
	var out []*kgo.Record
	for _, r := range records {
		if !cleaned(r) || last[string(r.Key)] == r.Offset {
			out = append(out, r)
		}
	}
	return out
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("counted:\n got %q\nwant %q", got, want)
	}
}

func TestChainCountsAZombiesBatchOnlyBeforeTheNewEpoch(t *testing.T) {
	var l testLog
	a := l.claim("a")      // 0
	l.batch(a, "x=1")      // 1, 2: a owns the partition
	l.batch(a, "y=1")      // 3, 4: a is a zombie already, but b has not claimed yet
	b := l.claim("b")      // 5
	l.batch(a, "x=zombie") // 6, 7: after b's claim
	l.batch(b, "x=2")      // 8, 9
	expect(t, counted(t, l.records),
		"epoch@0", "x=1", "trailer@2", "y=1", "trailer@4", "epoch@5", "x=2", "trailer@9")
}

func TestChainTwoQuickOwners(t *testing.T) {
	var l testLog
	a := l.claim("a")
	l.batch(a, "x=1")
	b := l.claim("b") // 3
	c := l.claim("c") // 4: before b wrote anything
	l.batch(b, "x=b") // 5, 6: b never owned the partition in the log
	l.batch(c, "x=c") // 7, 8
	expect(t, counted(t, l.records),
		"epoch@0", "x=1", "trailer@2", "epoch@3", "epoch@4", "x=c", "trailer@8")
}

func TestChainZombiesBatchWithoutItsTrailer(t *testing.T) {
	var l testLog
	a := l.claim("a")
	l.batch(a, "x=1")
	b := l.claim("b")       // 3
	l.change(a, "x", "cut") // 4: a zombie's change, its trailer not written
	l.batch(b, "y=1")       // 5, 6
	expect(t, counted(t, l.records), "epoch@0", "x=1", "trailer@2", "epoch@3", "y=1", "trailer@6")
}

// A change is judged by its epoch, not by its batch's trailer: a zombie's
// late trailer replaces, once compacted, the last trailer its epoch wrote
// while it was in force, and the changes that trailer closed still count.
func TestChainKeepsChangesWhoseTrailerWasCompactedAway(t *testing.T) {
	var l testLog
	a := l.claim("a")
	l.batch(a, "x=1")      // 1, 2: a's last trailer in force
	b := l.claim("b")      // 3
	l.batch(a, "y=zombie") // 4, 5: a's trailer key again
	l.batch(b, "z=1")      // 6, 7
	expect(t, counted(t, compacted(l.records)), "epoch@0", "x=1", "epoch@3", "z=1", "trailer@7")
}

// A changelog written by transactional rounds holds changes without
// headers: they count before the partition's first epoch record, as the
// log of the cluster before its nodes wrote rounds without a transaction;
// one after it is a transactional node's that is no owner.
func TestChainCountsTransactionalChangesBeforeTheFirstClaim(t *testing.T) {
	var l testLog
	l.add(&kgo.Record{Key: []byte("x"), Value: []byte("txn")}) // 0
	a := l.claim("a")                                          // 1
	l.add(&kgo.Record{Key: []byte("y"), Value: []byte("txn")}) // 2
	l.batch(a, "z=1")                                          // 3, 4
	expect(t, counted(t, l.records), "x=txn", "epoch@1", "z=1", "trailer@4")
}

func TestChainStartsAtALocalCopysEpoch(t *testing.T) {
	var l testLog
	a := l.claim("a")
	l.batch(a, "x=1")
	l.batch(a, "y=1") // 3, 4
	b := l.claim("b") // 5
	l.batch(a, "y=zombie")
	c := NewChain(a, Term{Generation: 1})
	var got []int64
	for _, r := range l.records[3:] {
		if e, _ := ReadEntry(r); c.Counts(e) {
			got = append(got, e.Offset)
		}
	}
	if !slices.Equal(got, []int64{3, 4, 5}) || c.Epoch() != b {
		t.Fatalf("tail from offset 3 under epoch %d: counted %v, epoch %d", a, got, c.Epoch())
	}
}

func TestChainRecordsReadBack(t *testing.T) {
	tr := Trailer{Epoch: 7, Commands: -1}
	tr.Book.Owe(3, []byte("k"), []byte("credit"))
	tr.Book.Owe(0, []byte{}, []byte{})
	tr.Book.Accept(2, 1)
	e, err := ReadEntry(TrailerRecord("t", 1, tr))
	if err != nil || e.Kind != KindTrailer || e.Epoch != 7 || e.Trailer.Commands != -1 ||
		!reflect.DeepEqual(e.Trailer.Book, tr.Book.counters()) {
		t.Fatalf("trailer read back as %+v, %v", e, err)
	}
	claim := Claim{Generation: 12, Member: "surge-1-abc", Nonce: 99}
	r := EpochRecord("t", 1, claim)
	r.Offset = 40
	if e, err := ReadEntry(r); err != nil || e.Kind != KindEpoch || e.Epoch != 40 || e.Claim != claim {
		t.Fatalf("epoch record read back as %+v, %v", e, err)
	}
	if e, err := ReadEntry(ChangeRecord("t", 1, 40, []byte("k"), nil)); err != nil || e.Kind != KindChange || e.Epoch != 40 || e.Value != nil {
		t.Fatalf("tombstone read back as %+v, %v", e, err)
	}
}

func TestChainRefusesMalformedRecords(t *testing.T) {
	bad := []*kgo.Record{
		{Headers: []kgo.RecordHeader{{Key: changeHeader, Value: []byte{0x80}}}},
		{Headers: []kgo.RecordHeader{{Key: trailerHeader}}, Value: []byte{1, 2}},
		{Headers: []kgo.RecordHeader{{Key: epochHeader}}, Value: []byte{0x80}},
	}
	trailing := TrailerRecord("t", 0, Trailer{Epoch: 1})
	trailing.Value = append(trailing.Value, 0)
	for i, r := range append(bad, trailing) {
		if _, err := ReadEntry(r); !errors.Is(err, ErrBadRecord) {
			t.Errorf("record %d read with %v", i, err)
		}
	}
}
