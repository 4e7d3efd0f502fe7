package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// These tests inject write faults with Pebble's errorfs over the real
// file system: a WAL write that finds no space left, and an fsync that
// fails after its write went through. test/e2e fills a real disk (a tmpfs)
// under the real binary where it runs as root.

// walFault fails the WAL operations of the kinds ops with err while on.
type walFault struct {
	on  atomic.Bool
	ops []errorfs.OpKind
	err error
}

func (f *walFault) String() string { return "walFault" }

func (f *walFault) MaybeError(op errorfs.Op) error {
	if f.on.Load() && slices.Contains(f.ops, op.Kind) && strings.HasSuffix(op.Path, ".log") {
		return f.err
	}
	return nil
}

func TestWriteFault(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []errorfs.OpKind
		err  error
		kind error
	}{
		{"disk full on WAL write", []errorfs.OpKind{errorfs.OpFileWrite}, syscall.ENOSPC, ErrFull},
		{"WAL fsync fails after the write", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}, syscall.EIO, ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Log("fault injected with Pebble's errorfs")
			testWriteFault(t, &walFault{ops: tc.ops, err: tc.err}, tc.kind)
		})
	}
}

// testWriteFault: acknowledged writes stay readable, the failed one is
// never readable (not in the store, not after a restart), later writes
// are refused with the fault's kind at once.
func testWriteFault(t *testing.T, inj *walFault, kind error) {
	dir := t.TempDir()
	var told atomic.Int32
	s, err := Open(dir, Options{FS: errorfs.Wrap(vfs.Default, inj), OnFault: func(*Fault) { told.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(s, "acked", []byte("1")); err != nil {
		t.Fatal(err)
	}
	inj.on.Store(true)
	err = put(s, "failed", []byte("2"))
	if !errors.Is(err, kind) {
		t.Fatalf("write on a failing disk: %v, want %v", err, kind)
	}
	if err := put(s, "later", []byte("3")); !errors.Is(err, kind) {
		t.Fatalf("write after the fault: %v, want %v", err, kind)
	}
	if f := s.Fault(); f == nil || !errors.Is(f, kind) {
		t.Fatalf("Fault() = %v", f)
	}
	if n := told.Load(); n != 1 {
		t.Fatalf("OnFault called %d times, want 1", n)
	}
	checkKV(t, s, "served from the faulted store")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The failed instance keeps the directory's lock until the process
	// exits, as a crashed server's would be released: reopen a copy of its
	// files, as a restart would find them.
	cp := copyDir(t, dir)
	r, err := Open(cp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkKV(t, r, "after a restart")
	if err := put(r, "resumed", []byte("4")); err != nil {
		t.Fatalf("write after a restart: %v", err)
	}
}

func checkKV(t *testing.T, s *Store, when string) {
	t.Helper()
	for key, want := range map[string]bool{"acked": true, "failed": false, "later": false} {
		found, err := s.GetFunc([]byte(key), func([]byte) error { return nil })
		if err != nil {
			t.Fatalf("%s: GET %s: %v", when, key, err)
		}
		if found != want {
			t.Errorf("%s: %s found=%v, want %v", when, key, found, want)
		}
	}
}

// copyDir copies the regular files of dir into a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		src, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
	return out
}

// put writes key's value in a batch of its own, durably.
func put(s *Store, key string, value []byte) error {
	b := s.NewBatch()
	_ = b.Set([]byte(key), value, nil)
	return s.Commit(b)
}

// walStall holds the next WAL write, once armed, until released: the
// moment a write is in flight in Pebble.
type walStall struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (w *walStall) String() string { return "walStall" }

func (w *walStall) MaybeError(op errorfs.Op) error {
	if op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") && w.armed.CompareAndSwap(true, false) {
		close(w.entered)
		<-w.release
	}
	return nil
}

// TestWriteInFlightWhenFenced: a write whose WAL record is being written
// when another write finds the disk full (a flush, the key-value store's
// compaction) must get the fault. The fence parks the WAL writer for
// good, so a write waiting for its fsync waited forever: a client's PUT
// hung instead of getting 507.
func TestWriteInFlightWhenFenced(t *testing.T) {
	for _, noWait := range []bool{false, true} {
		t.Run(map[bool]string{false: "Commit", true: "CommitNoWait"}[noWait], func(t *testing.T) {
			stall := &walStall{entered: make(chan struct{}), release: make(chan struct{})}
			s, err := Open(t.TempDir(), Options{FS: errorfs.Wrap(vfs.Default, stall)})
			if err != nil {
				t.Fatal(err)
			}
			if err := put(s, "acked", []byte("1")); err != nil {
				t.Fatal(err)
			}
			stall.armed.Store(true)
			res := make(chan error, 1)
			go func() {
				b := s.NewBatch()
				_ = b.Set([]byte("failed"), []byte("2"), nil)
				if !noWait {
					res <- s.Commit(b)
					return
				}
				p, err := s.CommitNoWait(b)
				if err == nil {
					err = p.Wait()
				}
				res <- err
			}()
			<-stall.entered
			// Another file's write finds the disk full while the record
			// is being written; the fence waits for that write to end.
			go s.guard.fail(syscall.ENOSPC)
			for s.guard.fenced() == nil {
				runtime.Gosched()
			}
			close(stall.release)
			if err := <-res; !errors.Is(err, ErrFull) {
				t.Fatalf("write in flight when the disk filled: %v, want %v", err, ErrFull)
			}
			checkKV(t, s, "served from the faulted store")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A commit that fails with a write error the guard did not record (its
// file bypassed the guard, or the error came another way) still faults
// the store: later writes are refused with the error's kind, the failed
// commit is an error rather than a crash, and reads go on.
func TestCommitErrorUnseenByTheGuardFaultsTheStore(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := put(s, "acked", []byte("1")); err != nil {
		t.Fatal(err)
	}
	var failed error
	func() {
		defer s.recoverFault(&failed)
		pebbleLogger{s}.Fatalf("pebble: fatal commit error: %v", fmt.Errorf("write 000005.log: %w", syscall.ENOSPC))
	}()
	if !errors.Is(failed, ErrFull) {
		t.Fatalf("the failed commit: %v, want %v", failed, ErrFull)
	}
	if err := put(s, "later", []byte("2")); !errors.Is(err, ErrFull) {
		t.Fatalf("a write after it: %v, want %v", err, ErrFull)
	}
	checkKV(t, s, "after a commit error the guard did not see")
}

// A store whose disk fails the WAL write its Close makes (a NoSync
// store's last commits wait in the WAL writer's buffer until then) closes
// with the fault: the fence parks the failed instance's close for good,
// as it parks all its file work, so a Close that waited for it would
// never return, and a node shutting down would hang.
func TestCloseFaultsMidClose(t *testing.T) {
	fault := &walFault{ops: []errorfs.OpKind{errorfs.OpFileWrite}, err: syscall.EIO}
	s, err := Open(t.TempDir(), Options{NoSync: true, FS: errorfs.Wrap(vfs.Default, fault)})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	_ = b.Set([]byte("unsynced"), []byte("1"), nil)
	if err := s.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	fault.on.Store(true)
	if err := s.Close(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Close with its WAL write failing: %v, want %v", err, ErrUnavailable)
	}
}
