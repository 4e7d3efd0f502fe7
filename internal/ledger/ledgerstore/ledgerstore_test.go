package ledgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

var t0 = time.Date(2026, 11, 22, 5, 30, 0, 123456789, time.UTC)

// Records decode with their times in UTC and nil for absent metadata, so
// the values below are written that way and compared with DeepEqual.

func sampleAccounts() []ledger.Account {
	return []ledger.Account{
		{ID: "alice", Currency: "USD", CreatedAt: t0},
		{ID: "@world", Currency: "USD", CreatedAt: t0.Add(-time.Hour)},
		{ID: "gold:1.a-b_c", Currency: "EURO12345678", OverdraftLimit: ledger.MaxAmount, CreatedAt: t0,
			Metadata: map[string]string{"tier": "gold", "": "empty key", "note": "ünïcødé ✓", "empty": ""}},
		{ID: "x", Currency: "X", OverdraftLimit: 1, CreatedAt: time.Unix(0, 1).UTC(), Metadata: map[string]string{"k": "v"}},
	}
}

func sampleTransfers() []ledger.Transfer {
	base := ledger.Transfer{ID: "t-1", From: "@world", To: "alice", Amount: 100, Currency: "USD",
		Memo: "funding", State: ledger.StatePosted, PostedAmount: 100, CreatedAt: t0, UpdatedAt: t0}
	pending := base
	pending.ID, pending.State, pending.TwoPhase, pending.Timeout, pending.PostedAmount = "t-2", ledger.StatePending, true, 7*24*time.Hour, 0
	pending.CurrencyGiven = true
	partly := pending
	partly.ID, partly.State, partly.PostedAmount, partly.UpdatedAt = "t-3", ledger.StatePosted, 37, t0.Add(time.Second)
	voided := pending
	voided.ID, voided.State, voided.Timeout, voided.UpdatedAt = "t-4", ledger.StateVoided, 0, t0.Add(time.Minute)
	expired := pending
	expired.ID, expired.State, expired.Timeout, expired.UpdatedAt, expired.Memo = "t-5", ledger.StateExpired, time.Millisecond, t0.Add(time.Millisecond), ""
	huge := base
	huge.ID, huge.Amount, huge.PostedAmount, huge.Memo = "018f-uuid-like-0000", ledger.MaxAmount, ledger.MaxAmount, string(bytes.Repeat([]byte("m"), ledger.MaxMemoLength))
	return []ledger.Transfer{base, pending, partly, voided, expired, huge}
}

func sampleEntries() []ledger.Entry {
	return []ledger.Entry{
		{TransferID: "t-1", Direction: ledger.Credit, Amount: 100, BalanceAfter: 100, Counterpart: "@world", Memo: "funding", At: t0},
		{TransferID: "t-2", Direction: ledger.Debit, Amount: 1, BalanceAfter: -ledger.MaxSupply, Counterpart: "bob", At: t0},
		{TransferID: "t-3", Direction: ledger.Debit, Amount: ledger.MaxAmount, BalanceAfter: 0, Counterpart: "x", Memo: "ü", At: t0.Add(time.Nanosecond)},
	}
}

func TestAccountRoundTrip(t *testing.T) {
	for _, a := range sampleAccounts() {
		b := encodeAccount(nil, &a)
		got, err := decodeAccount(b)
		if err != nil {
			t.Fatalf("%s: %v", a.ID, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, a)
		}
	}
	// The record keeps what the account was opened with, not its balance,
	// pending sum or entry count (those follow from history and holds).
	a := ledger.Account{ID: "alice", Currency: "USD", CreatedAt: t0, Balance: 5, Pending: 3, Entries: 9}
	got, err := decodeAccount(encodeAccount(nil, &a))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "alice" || got.Currency != "USD" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("decoded %+v", got)
	}
	// An empty metadata map is stored as none.
	a = ledger.Account{ID: "e", Currency: "USD", CreatedAt: t0, Metadata: map[string]string{}}
	if got, err = decodeAccount(encodeAccount(nil, &a)); err != nil || len(got.Metadata) != 0 {
		t.Fatalf("empty metadata: %+v %v", got, err)
	}
}

// Transfers read back from their records, each with every field.
func TestTransferRoundTrip(t *testing.T) {
	for _, tr := range sampleTransfers() {
		got, err := decodeTransfer(tr.ID, encodeTransfer(nil, &tr))
		if err != nil {
			t.Fatalf("%s: %v", tr.ID, err)
		}
		if !reflect.DeepEqual(got, tr) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, tr)
		}
		if !got.ExpiresAt().Equal(tr.ExpiresAt()) {
			t.Fatalf("%s: expires %v, want %v", tr.ID, got.ExpiresAt(), tr.ExpiresAt())
		}
	}
	// A transfer posted once, the common case, leaves out what its key or
	// other fields say: its id, update time, posted amount and timeout.
	posted, pending := sampleTransfers()[0], sampleTransfers()[1]
	if enc := encodeTransfer(nil, &posted); bytes.Contains(enc, []byte(posted.ID)) {
		t.Errorf("posted transfer record holds its id: %q", enc)
	}
	if a, b := len(encodeTransfer(nil, &posted)), len(encodeTransfer(nil, &pending)); a >= b {
		t.Errorf("posted transfer record: %d bytes, not shorter than a pending one's %d", a, b)
	}
}

// Encoders append to dst without disturbing what it held.
func TestEncodeAppends(t *testing.T) {
	prefix := []byte("prefix")
	tr := sampleTransfers()[1]
	b := encodeTransfer(slices.Clone(prefix), &tr)
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("prefix lost: %q", b[:len(prefix)])
	}
	got, err := decodeTransfer(tr.ID, b[len(prefix):])
	if err != nil || !reflect.DeepEqual(got, tr) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

type decodeFunc func([]byte) error

func decoders() map[string]decodeFunc {
	return map[string]decodeFunc{
		"account":  func(b []byte) error { _, err := decodeAccount(b); return err },
		"transfer": func(b []byte) error { _, err := decodeTransfer("t-1", b); return err },
		"chunk":    func(b []byte) error { _, err := decodeWholeChunk(b); return err },
		"journal":  func(b []byte) error { _, err := journalEntries(b); return err },
	}
}

// validEncodings returns well-formed records of each kind.
func validEncodings() map[string][][]byte {
	out := map[string][][]byte{}
	for _, a := range sampleAccounts() {
		out["account"] = append(out["account"], encodeAccount(nil, &a))
	}
	for _, tr := range sampleTransfers() {
		out["transfer"] = append(out["transfer"], encodeTransfer(nil, &tr))
	}
	entries := sampleEntries()
	for i := range entries {
		out["chunk"] = append(out["chunk"], chunkOf(entries[i:]))
	}
	out["journal"] = [][]byte{journalOf(sampleJournal()), journalOf(nil)}
	return out
}

func TestDecodeCorrupt(t *testing.T) {
	decs := decoders()
	for kind, encs := range validEncodings() {
		dec := decs[kind]
		for _, enc := range encs {
			// Every proper prefix is missing a field.
			for n := range len(enc) {
				if err := dec(enc[:n]); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("%s truncated to %d of %d bytes: err %v", kind, n, len(enc), err)
				}
			}
			// Trailing bytes are not ignored.
			if err := dec(append(slices.Clone(enc), 0)); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%s with a trailing byte: err %v", kind, err)
			}
			// An unknown version is not read as a known one.
			for _, v := range []byte{0, chunkVersion + 1, 0xff} {
				bad := slices.Clone(enc)
				bad[0] = v
				if err := dec(bad); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("%s with version %d: err %v", kind, v, err)
				}
			}
			// Every single-byte change either decodes or is an error.
			for i := range enc {
				for _, v := range []byte{0, 0x7f, 0x80, 0xff} {
					bad := slices.Clone(enc)
					bad[i] = v
					_ = dec(bad)
				}
			}
		}
	}
	for kind, dec := range decs {
		for _, b := range [][]byte{
			nil, {}, {1},
			// a string length far beyond the record
			{1, 0xff, 0xff, 0xff, 0xff, 0x0f},
			// a string length beyond any int
			{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
			// an overlong varint
			append([]byte{1, 0}, bytes.Repeat([]byte{0x80}, 11)...),
		} {
			if err := dec(b); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%s(%x): err %v", kind, b, err)
			}
		}
	}
	// Metadata: too many keys, and fewer keys than announced.
	e := codec.Encoder{}
	e.Byte(store.RecordVersion)
	e.String("a")
	e.String("USD")
	e.Varint(0)
	e.Varint(t0.UnixNano())
	e.Uvarint(ledger.MaxMetadataKeys + 1)
	for i := range ledger.MaxMetadataKeys + 1 {
		e.String(fmt.Sprint("k", i))
		e.String("v")
	}
	if _, err := decodeAccount(e.B); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("%d metadata keys: err %v", ledger.MaxMetadataKeys+1, err)
	}
	e = codec.Encoder{}
	e.Byte(store.RecordVersion)
	e.String("a")
	e.String("USD")
	e.Varint(0)
	e.Varint(t0.UnixNano())
	e.Uvarint(3)
	e.String("k")
	e.String("v")
	if _, err := decodeAccount(e.B); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("3 metadata keys announced, 1 present: err %v", err)
	}
}

// fuzzDecode checks that dec never panics and that whatever it accepts
// encodes back to bytes it decodes to the same record.
func fuzzDecode[T any](f *testing.F, seeds [][]byte, dec func([]byte) (T, error), enc func([]byte, *T) []byte) {
	for _, s := range seeds {
		f.Add(s)
		for n := 0; n < len(s); n += 3 {
			f.Add(s[:n])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := dec(b)
		if err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("error %v is not codec.ErrCorrupt", err)
			}
			return
		}
		again, err := dec(enc(nil, &v))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", v, err)
		}
		if !reflect.DeepEqual(again, v) {
			t.Fatalf("re-encoding changed the record:\n got %+v\nwant %+v", again, v)
		}
	})
}

func FuzzDecodeAccount(f *testing.F) {
	fuzzDecode(f, validEncodings()["account"], decodeAccount, encodeAccount)
}

func FuzzDecodeTransfer(f *testing.F) {
	dec := func(b []byte) (ledger.Transfer, error) { return decodeTransfer("t-1", b) }
	fuzzDecode(f, validEncodings()["transfer"], dec, encodeTransfer)
}

func FuzzDecodeChunk(f *testing.F) {
	enc := func(dst []byte, entries *[]ledger.Entry) []byte {
		return append(dst, chunkOf(reversed(*entries))...)
	}
	fuzzDecode(f, validEncodings()["chunk"], decodeWholeChunk, enc)
}

func FuzzDecodeJournal(f *testing.F) {
	dec := journalEntries
	enc := func(dst []byte, entries *[]ledger.AccountEntry) []byte { return append(dst, journalOf(*entries)...) }
	fuzzDecode(f, validEncodings()["journal"], dec, enc)
}

func openStore(t *testing.T, dir string) Store {
	t.Helper()
	s, err := store.Open(dir, store.Options{CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return Store{s}
}

func commit(t *testing.T, s Store, fill func(w *LedgerBatch)) {
	t.Helper()
	w := NewLedgerBatch(s.NewBatch())
	fill(w)
	if err := s.Commit(w.Batch); err != nil {
		t.Fatal(err)
	}
}

func seqs(es []ledger.Entry) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func span(hi, lo uint64) []uint64 {
	var out []uint64
	for s := hi; s >= lo && s > 0; s-- {
		out = append(out, s)
	}
	return out
}

func TestRecordsPersistAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	accounts, transfers := sampleAccounts(), sampleTransfers()
	commit(t, s, func(w *LedgerBatch) {
		for i := range accounts {
			w.PutAccount(&accounts[i])
		}
		for i := range transfers {
			w.PutTransfer(&transfers[i])
		}
		w.PutHold("t-2")
		putRun(w, "alice", run("alice", 1, 1))
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	stored := map[string]ledger.Account{}
	if err := s.EachAccount(func(a ledger.Account) error { stored[a.ID] = a; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		if got := stored[a.ID]; !reflect.DeepEqual(got, a) {
			t.Fatalf("account %s after reopen = %+v, want %+v", a.ID, got, a)
		}
	}
	if len(stored) != len(accounts) {
		t.Fatalf("%d accounts after reopen, want %d", len(stored), len(accounts))
	}
	for _, tr := range transfers {
		got, ok, err := s.Transfer(tr.ID)
		if err != nil || !ok || !reflect.DeepEqual(got, tr) {
			t.Fatalf("Transfer(%s) = %+v %v %v", tr.ID, got, ok, err)
		}
	}
	if _, ok, err := s.Transfer("nothing"); ok || err != nil {
		t.Fatalf("Transfer(nothing) = %v %v", ok, err)
	}
	if h, err := s.History("alice", math.MaxUint64, 10); err != nil || len(h) != 1 || h[0].Seq != 1 {
		t.Fatalf("history after reopen: %+v %v", h, err)
	}
	var err error
	n := 0
	for range s.TransferIDs(&err) {
		n++
	}
	if err != nil || n != len(transfers) {
		t.Fatalf("%d transfer ids after reopen (%v), want %d", n, err, len(transfers))
	}
}

func TestEachAccount(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	accounts := sampleAccounts()
	commit(t, s, func(w *LedgerBatch) {
		for i := range accounts {
			w.PutAccount(&accounts[i])
		}
		// Records of other kinds must not be visited.
		tr := sampleTransfers()[0]
		w.PutTransfer(&tr)
		putRun(w, "alice", run("alice", 1, 1))
		w.PutHold("t-1")
	})
	var got []ledger.Account
	if err := s.EachAccount(func(a ledger.Account) error { got = append(got, a); return nil }); err != nil {
		t.Fatal(err)
	}
	// In key order.
	want := slices.Clone(accounts)
	slices.SortFunc(want, func(a, b ledger.Account) int { return bytes.Compare([]byte(a.ID), []byte(b.ID)) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EachAccount:\n got %+v\nwant %+v", got, want)
	}

	// fn's error stops the walk and is returned.
	stop := errors.New("stop")
	calls := 0
	err := s.EachAccount(func(ledger.Account) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("EachAccount with a failing fn: %v after %d calls", err, calls)
	}

	// A corrupt account record is reported.
	b := s.NewBatch()
	_ = b.Set(store.Key(nil, prefixAccount, "zzz"), []byte{1, 2}, nil)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.EachAccount(func(ledger.Account) error { return nil }); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("corrupt account: %v", err)
	}
}

func TestEachHold(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	transfers := sampleTransfers()
	commit(t, s, func(w *LedgerBatch) {
		for i := range transfers {
			w.PutTransfer(&transfers[i])
		}
		w.PutHold("t-2")
		w.PutHold("t-3")
		w.PutHold("t-4")
	})
	// Closing a hold removes it from the index; opening and closing in the
	// same batch leaves nothing.
	commit(t, s, func(w *LedgerBatch) {
		w.DeleteHold("t-3")
		w.PutHold("t-5")
		w.DeleteHold("t-5")
	})
	var ids []string
	if err := s.EachHold(func(tr ledger.Transfer) error {
		ids = append(ids, tr.ID)
		if want := transfers[slices.IndexFunc(transfers, func(x ledger.Transfer) bool { return x.ID == tr.ID })]; !reflect.DeepEqual(tr, want) {
			t.Errorf("hold %s = %+v, want %+v", tr.ID, tr, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"t-2", "t-4"}) {
		t.Fatalf("holds %v", ids)
	}
	// A hold without its transfer record is corruption.
	commit(t, s, func(w *LedgerBatch) { w.PutHold("ghost") })
	if err := s.EachHold(func(ledger.Transfer) error { return nil }); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("dangling hold: %v", err)
	}
}

func TestTransferIDs(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	var err error
	for range s.TransferIDs(&err) {
		t.Fatalf("an empty store has transfer ids")
	}
	if err != nil {
		t.Fatal(err)
	}
	transfers := sampleTransfers()
	commit(t, s, func(w *LedgerBatch) {
		for i := range transfers {
			w.PutTransfer(&transfers[i])
		}
		w.PutHold("t-2") // other prefixes are not transfers
	})
	var ids []string
	for id := range s.TransferIDs(&err) {
		ids = append(ids, id)
	}
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tr := range transfers {
		want = append(want, tr.ID)
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("TransferIDs = %v, want %v", ids, want)
	}
	// Stopping early is allowed.
	n := 0
	for range s.TransferIDs(&err) {
		n++
		break
	}
	if n != 1 || err != nil {
		t.Fatalf("early stop: %d ids, %v", n, err)
	}
}
