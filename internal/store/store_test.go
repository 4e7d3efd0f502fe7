package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestStoreGetScanCommit(t *testing.T) {
	var syncs int
	s, err := Open(t.TempDir(), Options{OnSync: func(d time.Duration) {
		if d < 0 {
			t.Errorf("negative sync time %v", d)
		}
		syncs++
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		_ = b.Set([]byte(k), []byte("v"+k), nil)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if syncs != 1 {
		t.Fatalf("OnSync called %d times for one commit", syncs)
	}
	v, ok, err := s.Get([]byte("k2"))
	if err != nil || !ok || string(v) != "vk2" {
		t.Fatalf("Get = %q %v %v", v, ok, err)
	}
	if _, ok, err := s.Get([]byte("nope")); ok || err != nil {
		t.Fatalf("Get(nope) = %v %v", ok, err)
	}
	var keys []string
	collect := func(k, _ []byte) (bool, error) { keys = append(keys, string(k)); return true, nil }
	if err := s.Scan([]byte("k2"), []byte("k4"), false, collect); err != nil || !slices.Equal(keys, []string{"k2", "k3"}) {
		t.Fatalf("Scan forward = %v %v", keys, err)
	}
	keys = nil
	if err := s.Scan([]byte("k1"), []byte("k9"), true, collect); err != nil || !slices.Equal(keys, []string{"k4", "k3", "k2", "k1"}) {
		t.Fatalf("Scan reverse = %v %v", keys, err)
	}
	keys = nil
	stopAfter2 := func(k, _ []byte) (bool, error) { keys = append(keys, string(k)); return len(keys) < 2, nil }
	if err := s.Scan([]byte("k"), []byte("l"), false, stopAfter2); err != nil || len(keys) != 2 {
		t.Fatalf("Scan stopped = %v %v", keys, err)
	}
	boom := errors.New("boom")
	if err := s.Scan([]byte("k"), []byte("l"), false, func(_, _ []byte) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Fatalf("Scan error = %v", err)
	}
}

// With UncompressedL0, what a flush writes is stored uncompressed and what
// compactions write below it compressed; without it, everything is
// compressed.
func TestUncompressedL0(t *testing.T) {
	for _, raw := range []bool{false, true} {
		s, err := Open(t.TempDir(), Options{CacheBytes: 8 << 20, MemTableBytes: 4 << 20, UncompressedL0: raw})
		if err != nil {
			t.Fatal(err)
		}
		// Two flushes of the same keys: compacting them must rewrite
		// them rather than move a table down as it is.
		for range 2 {
			b := s.NewBatch()
			for i := range 1000 {
				if err := b.Set(fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte("surge"), 40), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		l0 := s.Metrics().Table
		if err := s.db.Compact(context.Background(), []byte("k"), []byte("l"), false); err != nil {
			t.Fatal(err)
		}
		below := s.Metrics().Table
		if raw && (l0.CompressedCountNone == 0 || below.CompressedCountSnappy == 0) ||
			!raw && (l0.CompressedCountNone != 0 || l0.CompressedCountSnappy == 0) {
			t.Errorf("UncompressedL0 %v: after the flush %d uncompressed and %d Snappy tables; after compacting, %d and %d",
				raw, l0.CompressedCountNone, l0.CompressedCountSnappy, below.CompressedCountNone, below.CompressedCountSnappy)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A store without a WAL takes every kind of commit and SyncWAL (none
// waits for an fsync), writes nothing to a WAL, and loses what it did not
// flush when it closes: it is a cache another log rebuilds.
func TestNoWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, commit := range []func(*Store, []byte) error{
		func(s *Store, k []byte) error { b := s.NewBatch(); _ = b.Set(k, k, nil); return s.Commit(b) },
		func(s *Store, k []byte) error { b := s.NewBatch(); _ = b.Set(k, k, nil); return s.CommitNoSync(b) },
	} {
		k := []byte{byte('a' + i)}
		if err := commit(s, k); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if v, ok, err := s.Get(k); err != nil || !ok || !bytes.Equal(v, k) {
			t.Fatalf("commit %d: read %q, %v, %v", i, v, ok, err)
		}
	}
	if err := s.SyncWAL(); err != nil {
		t.Fatalf("SyncWAL: %v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if fi, err := os.Stat(l); err != nil || fi.Size() > 0 {
			t.Fatalf("WAL %s written: %v", l, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{NoWAL: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Get([]byte("a")); err != nil || ok {
		t.Fatalf("an unflushed write survived the close: %v, %v", ok, err)
	}
}

// Flush writes a store's commits to table files: a store without a WAL
// keeps across a close what it committed before a Flush, not what it
// committed after.
func TestFlushKeepsTheCommitsOfAStoreWithoutAWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	set := func(k string) {
		b := s.NewBatch()
		_ = b.Set([]byte(k), []byte(k), nil)
		if err := s.CommitNoSync(b); err != nil {
			t.Fatal(err)
		}
	}
	set("flushed")
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	set("after")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{NoWAL: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Get([]byte("flushed")); err != nil || !ok {
		t.Fatalf("a flushed write is gone after a close: %v, %v", ok, err)
	}
	if _, ok, err := s.Get([]byte("after")); err != nil || ok {
		t.Fatalf("a write after the flush survived the close: %v, %v", ok, err)
	}
}
