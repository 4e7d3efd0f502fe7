package kvstore

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/surge-dev/surge/internal/store"
)

func open(t *testing.T, noSync bool) *Store {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{NoSync: noSync, CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(db, prometheus.NewRegistry())
}

func get(t *testing.T, s *Store, key string) (string, bool) {
	t.Helper()
	v, ok, err := s.Get(t.Context(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

func scan(t *testing.T, s *Store, start, end string) string {
	t.Helper()
	it, err := s.Scan(t.Context(), start, end)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var b bytes.Buffer
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		fmt.Fprintf(&b, "%s=%s;", k, v)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func barriers(s *Store) float64 { return testutil.ToFloat64(s.metrics.barriers) }

func TestPutGetDeleteScan(t *testing.T) {
	s := open(t, false)
	for _, k := range []string{"b", "a", "c"} {
		if err := s.Put(k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, s, "a"); !ok || v != "va" {
		t.Errorf("a = %q, %v", v, ok)
	}
	if _, ok := get(t, s, "b"); ok {
		t.Error("b found after its delete")
	}
	if got, want := scan(t, s, "a", ""), "a=va;c=vc;"; got != want {
		t.Errorf("scan = %q, want %q", got, want)
	}
	if n := barriers(s); n != 0 {
		t.Errorf("%v read barriers with no write in flight, want 0", n)
	}
}

// TestReadWaitsForInFlightWrite marks a write to a key as in flight, as
// Put does while its commit waits for the fsync, and checks that reads of
// that key, and ranges, wait for a WAL fsync, while reads of other keys do
// not.
func TestReadWaitsForInFlightWrite(t *testing.T) {
	s := open(t, false)
	if err := s.Put("hot", []byte("1")); err != nil {
		t.Fatal(err)
	}
	slot := s.begin("hot")
	other := "cold"
	for i := 0; slotOf(other) == slot; i++ {
		other = fmt.Sprint("cold", i)
	}
	get(t, s, other)
	if n := barriers(s); n != 0 {
		t.Fatalf("a read of another key waited (%v barriers)", n)
	}
	if v, ok := get(t, s, "hot"); !ok || v != "1" {
		t.Fatalf("hot = %q, %v", v, ok)
	}
	if n := barriers(s); n < 1 {
		t.Fatalf("a read of a key with a write in flight did not wait (%v barriers)", n)
	}
	before := barriers(s)
	scan(t, s, "a", "")
	if barriers(s) != before+1 {
		t.Error("a range read with a write in flight did not wait")
	}
	s.end(slot)
	before = barriers(s)
	get(t, s, "hot")
	scan(t, s, "a", "")
	if barriers(s) != before {
		t.Error("reads waited after the write was durable")
	}
}

func TestNoSyncReadsNeverWait(t *testing.T) {
	s := open(t, true)
	if slot := s.begin("k"); slot != -1 {
		t.Fatalf("a NoSync store marked a write (slot %d)", slot)
	}
	if err := s.Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	get(t, s, "k")
	scan(t, s, "k", "")
	if n := barriers(s); n != 0 {
		t.Errorf("%v barriers on a NoSync store", n)
	}
}

// TestConcurrentWritesLeaveNothingInFlight checks the in-flight table's
// bookkeeping under concurrency: every mark is undone.
func TestConcurrentWritesLeaveNothingInFlight(t *testing.T) {
	s := open(t, false)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprint(i % 7)
				var err error
				if (w+i)%3 == 0 {
					err = s.Delete(key)
				} else {
					err = s.Put(key, []byte(fmt.Sprint(w)))
				}
				if err != nil {
					t.Error(err)
				}
				get(t, s, key)
			}
		})
	}
	wg.Wait()
	if n := s.pending.Load(); n != 0 {
		t.Errorf("%d writes still counted in flight", n)
	}
	for i := range s.writing {
		if n := s.writing[i].Load(); n != 0 {
			t.Errorf("slot %d: %d writes still marked", i, n)
		}
	}
}

// TestNoWaitWritesStayInFlightUntilWaited checks PutNoWait and
// DeleteNoWait: the write is visible at once, a read of its key waits for a
// fsync until the write has been waited for, and the in-flight marks are
// gone after Wait.
func TestNoWaitWritesStayInFlightUntilWaited(t *testing.T) {
	s := open(t, false)
	put, err := s.PutNoWait(t.Context(), "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, s, "k"); !ok || v != "v" {
		t.Fatalf("k = %q, %v before Wait; a written value is visible at once", v, ok)
	}
	if n := barriers(s); n != 1 {
		t.Fatalf("a read of a write not yet waited for took %v barriers, want 1", n)
	}
	if err := put.Wait(); err != nil {
		t.Fatal(err)
	}
	del, err := s.DeleteNoWait(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("k still present after DeleteNoWait")
	}
	if err := del.Wait(); err != nil {
		t.Fatal(err)
	}
	before := barriers(s)
	get(t, s, "k")
	if barriers(s) != before || s.pending.Load() != 0 {
		t.Errorf("waited writes still in flight: %v barriers, %d pending", barriers(s)-before, s.pending.Load())
	}
}
