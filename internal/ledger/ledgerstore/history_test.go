package ledgerstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
)

// entry returns account's entry seq as the tests write it.
func entry(account string, seq uint64) ledger.Entry {
	return ledger.Entry{
		Seq: seq, TransferID: fmt.Sprintf("%s-%d", account, seq), Direction: ledger.Credit,
		Amount: int64(seq), BalanceAfter: int64(seq * (seq + 1) / 2), Counterpart: "@world", At: t0.Add(time.Duration(seq)),
	}
}

// run returns account's entries from..to, oldest first.
func run(account string, from, to uint64) []ledger.Entry {
	var out []ledger.Entry
	for seq := from; seq <= to; seq++ {
		out = append(out, entry(account, seq))
	}
	return out
}

func reversed[E any](s []E) []E {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// logOf returns entries, oldest first, as an account's log.
func logOf(entries []ledger.Entry) ledger.EntryLog {
	var l ledger.EntryLog
	for i := range entries {
		l.Append(&entries[i])
	}
	return l
}

// chunkOf encodes entries, oldest first, as a chunk.
func chunkOf(entries []ledger.Entry) []byte {
	l := logOf(entries)
	return encodeChunk(nil, l.Len(), l.Bytes())
}

// putRun stores entries, consecutive ones of account oldest first, as a
// chunk.
func putRun(w *LedgerBatch, account string, entries []ledger.Entry) {
	w.PutChunk(account, entries[len(entries)-1].Seq, entries[len(entries)-1].BalanceAfter, logOf(entries))
}

// journalOf encodes items as a journal record, an item of one entry each,
// with no holds.
func journalOf(items []ledger.AccountEntry) []byte {
	b := binary.AppendUvarint([]byte{journalVersion}, uint64(len(items)))
	return appendItems(binary.AppendUvarint(b, 0), items)
}

// journalV2Of encodes items as a version 2 journal record, which has no
// holds.
func journalV2Of(items []ledger.AccountEntry) []byte {
	return appendItems(binary.AppendUvarint([]byte{journalVersionV2}, uint64(len(items))), items)
}

func appendItems(b []byte, items []ledger.AccountEntry) []byte {
	for i := range items {
		b = ledger.AppendJournalItem(b, items[i].Account, &items[i].Entry)
	}
	return b
}

// journalEntries decodes a journal record's entries.
func journalEntries(b []byte) ([]ledger.AccountEntry, error) {
	var r JournalRecord
	err := decodeJournal(&r, b)
	return r.Entries, err
}

// putJournal stores items and holds as the journal record of a shard's
// batch n.
func putJournal(w *LedgerBatch, shard int, n uint64, items []ledger.AccountEntry, holds ...string) {
	w.PutJournal(shard, n, len(items), appendItems(nil, items), holds)
}

// chunkNewest is the newest seq the decoding tests give a chunk's key.
const chunkNewest = 1000

// decodeWholeChunk decodes every entry of a chunk, newest first.
func decodeWholeChunk(b []byte) ([]ledger.Entry, error) {
	return decodeChunk(nil, b, chunkNewest, math.MaxUint64, math.MaxInt)
}

func sampleJournal() []ledger.AccountEntry {
	var out []ledger.AccountEntry
	for i, e := range sampleEntries() {
		e.Seq = uint64(i*7 + 1)
		out = append(out, ledger.AccountEntry{Account: fmt.Sprint("acct-", i%2), Entry: e})
	}
	return out
}

func TestChunkRoundTrip(t *testing.T) {
	entries := sampleEntries()
	for i := range entries {
		entries[i].Seq = chunkNewest - uint64(len(entries)-1-i)
	}
	for version, encode := range map[int]func([]ledger.Entry) []byte{chunkVersion: chunkOf} {
		for n := 1; n <= len(entries); n++ {
			want := entries[len(entries)-n:]
			got, err := decodeWholeChunk(encode(want))
			if err != nil {
				t.Fatalf("version %d, %d entries: %v", version, n, err)
			}
			if !reflect.DeepEqual(got, reversed(want)) {
				t.Fatalf("version %d, round trip of %d:\n got %+v\nwant %+v", version, n, got, reversed(want))
			}
		}
		// A page stops at limit and skips entries at or after before.
		chunk := encode(entries)
		got, err := decodeChunk(nil, chunk, chunkNewest, chunkNewest, 1)
		if err != nil || !reflect.DeepEqual(got, []ledger.Entry{entries[len(entries)-2]}) {
			t.Fatalf("version %d, entries before the newest, limit 1: %+v %v", version, got, err)
		}
		if got, err := decodeChunk(got, chunk, chunkNewest, chunkNewest, 1); err != nil || len(got) != 1 {
			t.Fatalf("version %d, a full page takes no more: %+v %v", version, got, err)
		}
	}
}

func TestJournalRoundTrip(t *testing.T) {
	for _, want := range [][]ledger.AccountEntry{sampleJournal(), sampleJournal()[:1], nil} {
		for version, enc := range map[int][]byte{journalVersion: journalOf(want), journalVersionV2: journalV2Of(want)} {
			got, err := journalEntries(enc)
			if err != nil {
				t.Fatalf("version %d, %d entries: %v", version, len(want), err)
			}
			if len(got) != 0 || len(want) != 0 {
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round trip, version %d:\n got %+v\nwant %+v", version, got, want)
				}
			}
		}
	}
}

func TestHistory(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	// "a" has chunks of several sizes. Neighbours whose keys share "a" as
	// a prefix must not leak into its history: "ab", "a.", and a seq that
	// would sort after a's if the account part were not terminated.
	b := s.NewBatch()
	w := NewLedgerBatch(b)
	for _, r := range [][2]uint64{{1, 3}, {4, 10}, {11, 11}, {12, 25}} {
		putRun(w, "a", run("a", r[0], r[1]))
	}
	for _, acct := range []string{"ab", "a.", "@a"} {
		putRun(w, acct, run(acct, 1, 5))
	}
	putRun(w, "b", run("b", 300, 300))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		before uint64
		limit  int
		want   []uint64
	}{
		{26, 10, span(25, 16)},
		{16, 10, span(15, 6)},
		{6, 10, span(5, 1)},
		{12, 2, span(11, 10)},
		{11, 1, []uint64{10}},
		{1, 10, nil},
		{0, 10, nil},
		{math.MaxUint64, 3, span(25, 23)},
		{26, 1000, span(25, 1)},
		{13, 1, []uint64{12}},
		{26, 0, nil},
	} {
		got, err := s.History("a", c.before, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs(got), c.want) {
			t.Fatalf("History(a, %d, %d) = seqs %v, want %v", c.before, c.limit, seqs(got), c.want)
		}
		for _, e := range got {
			if want := entry("a", e.Seq); !reflect.DeepEqual(e, want) {
				t.Fatalf("entry %d = %+v, want %+v", e.Seq, e, want)
			}
		}
	}
	for acct, n := range map[string]uint64{"ab": 5, "a.": 5, "@a": 5, "nobody": 0, "": 0} {
		got, err := s.History(acct, math.MaxUint64, 100)
		if err != nil || !slices.Equal(seqs(got), span(n, 1)) {
			t.Fatalf("History(%q) = %v, %v; want %d entries", acct, seqs(got), err, n)
		}
	}
	if got, _ := s.History("b", math.MaxUint64, 10); !slices.Equal(seqs(got), []uint64{300}) {
		t.Fatalf("History(b) = %v", seqs(got))
	}
	// Tails finds the same newest entry, in any order of accounts.
	tails, err := s.Tails()
	if err != nil {
		t.Fatal(err)
	}
	for _, acct := range []string{"", "@a", "a", "a.", "ab", "b", "nobody", "a", "@a"} {
		want, _ := s.History(acct, math.MaxUint64, 1)
		got, ok, err := tails.Newest(acct)
		if err != nil || ok != (len(want) == 1) || ok && !reflect.DeepEqual(got, want[0]) {
			t.Fatalf("Tails.Newest(%q) = %+v, %v, %v; want %+v", acct, got, ok, err, want)
		}
	}
	if err := tails.Close(); err != nil {
		t.Fatal(err)
	}

	// Paging with the last seq as the next bound visits every entry once.
	for _, size := range []int{1, 7, 25} {
		var all []uint64
		for before := uint64(26); ; {
			page, err := s.History("a", before, size)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			all = append(all, seqs(page)...)
			before = page[len(page)-1].Seq
		}
		if !slices.Equal(all, span(25, 1)) {
			t.Fatalf("paged by %d: %v", size, all)
		}
	}

	// A corrupt record is an error, not a panic or a silent skip.
	b = s.NewBatch()
	if err := b.Set(historyKey(nil, "a", 26), []byte{chunkVersion, 1, 9}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History("a", math.MaxUint64, 5); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("corrupt chunk: err %v", err)
	}
	if got, err := s.History("a", 26, 5); err != nil || len(got) != 5 {
		t.Fatalf("below the corrupt chunk: %v, %v", seqs(got), err)
	}
}

func TestJournal(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	// Two shards' records, written out of order; each is read back in its
	// shard's order, with its name and holds, and trimming one shard leaves
	// the other alone.
	batch := func(account string, seq uint64) []ledger.AccountEntry {
		return []ledger.AccountEntry{{Account: account, Entry: entry(account, seq)}, {Account: "x", Entry: entry("x", seq)}}
	}
	commit(t, s, func(w *LedgerBatch) {
		putJournal(w, 1, 0, batch("b", 1))
		putJournal(w, 0, 1, batch("a", 2), "h1", "h2")
		putJournal(w, 0, 0, batch("a", 1))
		putJournal(w, 1, 256, batch("b", 2))
		putJournal(w, 1, 257, nil, "h3")
	})
	read := func() []string {
		var out []string
		err := s.EachJournalRecord(func(r *JournalRecord) error {
			out = append(out, fmt.Sprintf("%d/%d", r.Shard, r.N))
			for _, e := range r.Entries {
				if want := entry(e.Account, e.Seq); !reflect.DeepEqual(e.Entry, want) {
					t.Fatalf("journaled %+v, want %+v", e.Entry, want)
				}
				out = append(out, fmt.Sprint(e.Account, e.Seq))
			}
			out = append(out, r.Holds...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := []string{"0/0", "a1", "x1", "0/1", "a2", "x2", "h1", "h2", "1/0", "b1", "x1", "1/256", "b2", "x2", "1/257", "h3"}
	if got := read(); !slices.Equal(got, all) {
		t.Fatalf("journal %v, want %v", got, all)
	}
	var shard1 []string
	err := s.EachShardJournalRecord(1, func(r *JournalRecord) error {
		shard1 = append(shard1, fmt.Sprintf("%d/%d", r.Shard, r.N))
		return nil
	})
	if want := []string{"1/0", "1/256", "1/257"}; err != nil || !slices.Equal(shard1, want) {
		t.Fatalf("shard 1's journal: %v %v, want %v", shard1, err, want)
	}
	if st, err := s.JournalState(); err != nil || st.Epoch != 0 || len(st.Trimmed) != 0 {
		t.Fatalf("state of a new journal: %+v, %v", st, err)
	}
	commit(t, s, func(w *LedgerBatch) { w.TrimJournal(1, 256) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	if got, want := read(), append(all[:8:8], all[11:]...); !slices.Equal(got, want) {
		t.Fatalf("journal after trimming shard 1 below 256: %v, want %v", got, want)
	}
	if st, err := s.JournalState(); err != nil || !maps.Equal(st.Trimmed, map[int]uint64{1: 256}) {
		t.Fatalf("state after trimming: %+v, %v", st, err)
	}
	commit(t, s, func(w *LedgerBatch) { w.ResetJournal(42) })
	if got := read(); len(got) != 0 {
		t.Fatalf("journal after a reset: %v", got)
	}
	if st, err := s.JournalState(); err != nil || st.Epoch != 42 || len(st.Trimmed) != 0 {
		t.Fatalf("state after a reset: %+v, %v", st, err)
	}
}
