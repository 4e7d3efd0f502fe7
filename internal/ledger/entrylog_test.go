package ledger

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// sampleLog returns n entries numbered from first and their log, checking
// that Append writes each entry's encoding.
func sampleLog(t *testing.T, first uint64, n int) ([]Entry, EntryLog) {
	t.Helper()
	var entries []Entry
	var l EntryLog
	for i := range n {
		e := Entry{
			Seq: first + uint64(i), TransferID: fmt.Sprint("t", i), Direction: Direction(1 + i%2),
			Amount: int64(i*1000 + 1), BalanceAfter: int64(-i * 77), Counterpart: fmt.Sprint("acct-", i),
			Memo: string(make([]byte, i*13)), At: time.Unix(1_700_000_000, int64(i)).UTC(),
		}
		entries = append(entries, e)
		start := len(l.Bytes())
		l.Append(&e)
		got, rest, ok := ReadEntry(l.Bytes()[start:])
		e.Seq = 0 // not encoded: a log knows it from the entry's place
		if !ok || len(rest) != 0 || !reflect.DeepEqual(got, e) {
			t.Fatalf("Append wrote the encoding of %+v (ok %v, %d bytes left), want %+v", got, ok, len(rest), e)
		}
	}
	return entries, l
}

// A log reads back every entry, and a page of it is the entries below
// before, newest first, up to limit: for every before and limit.
func TestEntryLogPages(t *testing.T) {
	const first, n = 41, 70 // more than fit the offsets kept on the stack
	entries, l := sampleLog(t, first, n)
	if l.Len() != n || !reflect.DeepEqual(logEntries(l, first), entries) {
		t.Fatalf("log of %d reads back %d entries", n, len(logEntries(l, first)))
	}
	for before := uint64(0); before <= first+n+1; before++ {
		for _, limit := range []int{0, 1, 2, 5, n, n + 3} {
			var want []Entry
			for i := len(entries) - 1; i >= 0 && len(want) < limit; i-- {
				if entries[i].Seq < before {
					want = append(want, entries[i])
				}
			}
			got := l.AppendNewest(nil, first, before, limit)
			if len(want) == 0 && len(got) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("before %d limit %d: got seqs %v, want %v", before, limit, seqsOf(got), seqsOf(want))
			}
		}
	}
	// A page continues what out already holds, up to limit in all.
	got := l.AppendNewest(entries[:1:1], first, first+3, 2)
	if want := []Entry{entries[0], entries[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("appended page %v, want %v", seqsOf(got), seqsOf(want))
	}
}

// Bytes that do not hold the entries they claim are refused, never read
// past.
func TestAppendNewestCorrupt(t *testing.T) {
	_, l := sampleLog(t, 1, 5)
	b := l.Bytes()
	for cut := range len(b) {
		if _, ok := AppendNewest(nil, b[:cut], 5, 1, 100, 10); ok {
			t.Fatalf("%d of %d bytes read as 5 entries", cut, len(b))
		}
	}
	if _, ok := AppendNewest(nil, append(slices.Clone(b), 0), 5, 1, 100, 10); ok {
		t.Fatal("a trailing byte was ignored")
	}
	if _, ok := AppendNewest(nil, b, 6, 1, 100, 10); ok {
		t.Fatal("5 entries read as 6")
	}
}

// A journal holds single entries and transfers between two accounts of the
// shard as one item; both read back as the entries they stand for, in
// order, and a journal cut anywhere but at an item's end does not read.
func TestJournal(t *testing.T) {
	entries, _ := sampleLog(t, 9, 3)
	debit, credit := entries[1], entries[1]
	debit.Direction, debit.Counterpart = Debit, "acct-b"
	credit.Seq, credit.Direction, credit.BalanceAfter, credit.Counterpart = 77, Credit, 123, "acct-a"
	want := []AccountEntry{{"acct-0", entries[0]}, {"acct-a", debit}, {"acct-b", credit}, {"acct-2", entries[2]}}

	b := AppendJournalItem(nil, "acct-0", &entries[0])
	ends := []int{len(b)}
	b = appendJournalPair(b, "acct-a", "acct-b", &debit, &credit)
	ends = append(ends, len(b))
	b = AppendJournalItem(b, "acct-2", &entries[2])
	var got []AccountEntry
	if !ReadJournal(b, func(ae *AccountEntry) { got = append(got, *ae) }) || !reflect.DeepEqual(got, want) {
		t.Fatalf("journal read back as\n%+v\nwant\n%+v", got, want)
	}
	for cut := range len(b) {
		if cut == 0 || slices.Contains(ends, cut) {
			continue
		}
		if ReadJournal(b[:cut], func(*AccountEntry) {}) {
			t.Fatalf("journal cut at %d of %d bytes read", cut, len(b))
		}
	}
	if ReadJournal([]byte{9}, func(*AccountEntry) {}) {
		t.Fatal("an item of unknown kind read")
	}
}

func seqsOf(entries []Entry) []uint64 {
	var out []uint64
	for _, e := range entries {
		out = append(out, e.Seq)
	}
	return out
}

// logEntries decodes every entry of l, numbering the oldest first.
func logEntries(l EntryLog, first uint64) []Entry {
	out := l.AppendNewest(nil, first, math.MaxUint64, math.MaxInt)
	slices.Reverse(out)
	return out
}

// journalItems decodes the entries of c's Journal.
func journalItems(c *Changes) []AccountEntry {
	var out []AccountEntry
	if !ReadJournal(c.Journal, func(ae *AccountEntry) { out = append(out, *ae) }) {
		panic("ledger: corrupt journal")
	}
	return out
}
