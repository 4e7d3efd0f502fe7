package kvstore

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/store"
)

// entries is a database of key-value entries as the layout functions
// write them, with the calls of the tests below.
type entries struct{ *store.Store }

func openEntries(t *testing.T, dir string, noSync bool) entries {
	t.Helper()
	s, err := Open(dir, store.Options{NoSync: noSync, CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return entries{s}
}

func openStore(t *testing.T, dir string) entries { return openEntries(t, dir, false) }

func (e entries) PutKVNoWait(key string, value []byte) (store.Pending, error) {
	return putEntry(e.Store, key, value)
}

func (e entries) PutKV(key string, value []byte) error {
	w, err := putEntry(e.Store, key, value)
	if err != nil {
		return err
	}
	return w.Wait()
}

func (e entries) DeleteKV(key string) error {
	w, err := deleteEntry(e.Store, key)
	if err != nil {
		return err
	}
	return w.Wait()
}

// getKV returns a copy of key's value, or nil and false.
func getKV(t *testing.T, s entries, key string) ([]byte, bool) {
	t.Helper()
	var got []byte
	found, err := getEntry(s.Store, key, func(v []byte) error { got = bytes.Clone(v); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return got, found
}

func scanKV(t *testing.T, s entries, start, end string) []string {
	t.Helper()
	it, err := scanEntries(s.Store, start, end)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		out = append(out, string(k)+"="+string(v))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKVPutGetDelete(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if _, found := getKV(t, s, "a"); found {
		t.Fatal("a found in an empty store")
	}
	binary := []byte{0, 1, 0xff, '\n', 0}
	for key, v := range map[string][]byte{"a": []byte("1"), "bin": binary, "empty": {}} {
		if err := s.PutKV(key, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutKV("a", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKV("absent"); err != nil {
		t.Fatalf("deleting an absent key: %v", err)
	}
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	for key, want := range map[string][]byte{"a": []byte("2"), "bin": binary, "empty": {}} {
		got, found := getKV(t, s, key)
		if !found || !bytes.Equal(got, want) {
			t.Errorf("after reopen %q = %q (found %v), want %q", key, got, found, want)
		}
	}
	if err := s.DeleteKV("a"); err != nil {
		t.Fatal(err)
	}
	if _, found := getKV(t, s, "a"); found {
		t.Error("a still found after DeleteKV")
	}
}

// TestKVScanBounds checks that ranges are start-inclusive, end-exclusive,
// in key order, and never reach the ledger's keys beside them.
func TestKVScanBounds(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ledgerKey := s.NewBatch() // a ledger account's key, beside the entries
	_ = ledgerKey.Set([]byte("la/alice"), []byte{1}, nil)
	if err := s.Commit(ledgerKey); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "a", "c", "ab", "z/", "~"} {
		if err := s.PutKV(k, []byte(k+"!")); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		start, end string
		want       []string
	}{
		{"a", "", []string{"a=a!", "ab=ab!", "b=b!", "c=c!", "z/=z/!", "~=~!"}},
		{"a", "b", []string{"a=a!", "ab=ab!"}},
		{"ab", "c", []string{"ab=ab!", "b=b!"}},
		{"b", "b", nil},
		{"c", "a", nil},
		{"d", "z", nil},
		{"\x00", "a", nil},
	}
	for _, c := range cases {
		if got := scanKV(t, s, c.start, c.end); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("scan [%q, %q) = %q, want %q", c.start, c.end, got, c.want)
		}
	}
}

// TestKVConcurrentWritersShareFsyncs proves group commit rather than
// assuming it: writers committing at once, each waiting for durability,
// are served by fewer WAL fsyncs than there are writes, because Pebble's
// log writer syncs everything queued while the previous fsync ran in one
// go (record.LogWriter.flushLoop takes every waiting sync request at once).
func TestKVConcurrentWritersShareFsyncs(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	if !s.Syncs() {
		t.Fatal("the test store must sync")
	}
	const writers, each = 32, 40
	before := s.WALSyncs()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.PutKV(fmt.Sprintf("w%d-%d", w, i), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	syncs := s.WALSyncs() - before
	t.Logf("%d durable writes took %d WAL fsyncs", writers*each, syncs)
	if syncs == 0 {
		t.Fatal("no WAL fsync counted: the count does not work")
	}
	if syncs >= writers*each/2 {
		t.Errorf("%d concurrent durable writes took %d fsyncs: few or none were shared", writers*each, syncs)
	}
}

// TestKVSerialWritersSyncEach is the other side of the proof above: one
// writer at a time pays one fsync per write, so the count is real. Pebble
// counts an fsync just after it releases the commits waiting for it, so
// the latest ones may not be counted yet when a write returns; the bounds
// here and above leave a margin of half the writes for that.
func TestKVSerialWritersSyncEach(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	const n = 20
	before := s.WALSyncs()
	for i := range n {
		if err := s.PutKV(fmt.Sprint(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if syncs := s.WALSyncs() - before; syncs < n/2 {
		t.Errorf("%d serial durable writes took %d fsyncs, want about one each", n, syncs)
	}
}

func TestKVNoSync(t *testing.T) {
	s := openEntries(t, t.TempDir(), true)
	defer s.Close()
	if s.Syncs() {
		t.Error("a NoSync store reports that it syncs")
	}
	if err := s.PutKV("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, _ := getKV(t, s, "k"); string(got) != "v" {
		t.Errorf("k = %q, want v", got)
	}
}

// TestKVNoWaitWritesShareFsyncs is the case CommitNoWait exists for: one
// goroutine applies many writes and only then waits for them, as a
// connection with pipelined requests does, and they share fsyncs although
// nothing runs concurrently on the caller's side.
func TestKVNoWaitWritesShareFsyncs(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	const n = 64
	before := s.WALSyncs()
	writes := make([]store.Pending, 0, n)
	for i := range n {
		w, err := s.PutKVNoWait(fmt.Sprint("p", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		writes = append(writes, w)
	}
	for _, w := range writes {
		if err := w.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	syncs := s.WALSyncs() - before
	t.Logf("%d writes applied, then waited for: %d WAL fsyncs", n, syncs)
	if syncs >= n/2 {
		t.Errorf("%d writes waited for together took %d fsyncs: few or none were shared", n, syncs)
	}
	for i := range n {
		if _, ok, err := s.Get([]byte(kvPrefix + fmt.Sprint("p", i))); !ok || err != nil {
			t.Fatalf("p%d not stored (%v)", i, err)
		}
	}
}
