package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// A store whose disk refuses a write stops writing: Pebble cannot take a
// write error back (its commit pipeline is left locked, its memtable holds
// the batch whose WAL record failed), so carrying on would at best hang
// and at worst show readers a write nobody was told succeeded. Instead the
// first failed write or fsync fences the database's files (guardFS): every
// later write, create, rename or removal fails at once, so the failed
// instance can change nothing on disk, and every WAL file is cut back to
// what its last successful fsync covered, so that what remains on disk is
// exactly what was acknowledged. The store then answers reads from a
// read-only instance opened over those files (the committed state) and
// refuses writes with the fault, until the process restarts (see
// cli's resume watcher).

// ErrFull is the fault of a store whose disk is full; ErrUnavailable, of
// one whose disk failed a write otherwise. Errors of a faulted store's
// writes match one of them with errors.Is.
var (
	ErrFull        = errors.New("storage full")
	ErrUnavailable = errors.New("storage unavailable")
)

// Fault is why a store refuses writes: its kind (ErrFull or
// ErrUnavailable) and the error that caused it.
type Fault struct {
	Kind  error
	Cause error
}

func (f *Fault) Error() string { return fmt.Sprintf("%v: %v", f.Kind, f.Cause) }

// Unwrap lets errors.Is match the kind and the cause.
func (f *Fault) Unwrap() []error { return []error{f.Kind, f.Cause} }

// newFault classifies err: no space left, or a disk quota hit, is ErrFull.
func newFault(err error) *Fault {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &Fault{Kind: ErrFull, Cause: err}
	}
	return &Fault{Kind: ErrUnavailable, Cause: err}
}

// guardFS is the file system of a store's read-write Pebble instance: it
// fences the instance's files on their first write error (see above).
type guardFS struct {
	vfs.FS
	onFault func(*Fault)
	// durable is false when commits do not wait for fsyncs (NoSync): a
	// WAL is then cut back to its last whole write rather than its last
	// fsync, since acknowledgements never waited for one.
	durable bool

	mu    sync.Mutex
	fault *Fault
	wals  map[*guardFile]struct{}
}

func newGuardFS(fs vfs.FS, onFault func(*Fault), durable bool) *guardFS {
	return &guardFS{FS: fs, onFault: onFault, durable: durable, wals: make(map[*guardFile]struct{})}
}

// park stops the calling goroutine for good once the files are fenced:
// the failed instance's background work (flush retries, which Pebble runs
// back to back) then waits instead of spinning on errors, and nothing of
// it reaches the disk.
func (g *guardFS) park() {
	if g.fenced() != nil {
		select {}
	}
}

// fenced returns the fault once the files are fenced, else nil.
func (g *guardFS) fenced() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fault == nil {
		return nil
	}
	return g.fault
}

// fail fences the files on the first error a write returns: the WAL files
// are cut back to their last fsync, and onFault is told. It returns err.
func (g *guardFS) fail(err error) error {
	g.mu.Lock()
	first := g.fault == nil
	if first {
		g.fault = newFault(err)
	}
	wals := make([]*guardFile, 0, len(g.wals))
	for f := range g.wals {
		wals = append(wals, f)
	}
	g.mu.Unlock()
	if !first {
		return err
	}
	for _, f := range wals {
		f.truncateToSynced()
	}
	g.onFault(g.fault)
	return err
}

func (g *guardFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, g.fail(err)
	}
	gf := &guardFile{File: f, fs: g, wal: strings.HasSuffix(name, ".log")}
	if gf.wal {
		g.mu.Lock()
		g.wals[gf] = struct{}{}
		g.mu.Unlock()
	}
	return gf, nil
}

// Create creates a file, unless the files are fenced.
func (g *guardFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	g.park()
	f, err := g.FS.Create(name, c)
	return g.wrap(name, f, err)
}

// ReuseForWrite renames an old WAL file for reuse, unless fenced.
func (g *guardFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	g.park()
	f, err := g.FS.ReuseForWrite(oldname, newname, c)
	return g.wrap(newname, f, err)
}

// OpenReadWrite opens a file for writing, unless fenced.
func (g *guardFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	g.park()
	f, err := g.FS.OpenReadWrite(name, c, opts...)
	return g.wrap(name, f, err)
}

// Link, Remove, RemoveAll, Rename and MkdirAll change the directory, so a
// fenced instance may not call them.

func (g *guardFS) Link(oldname, newname string) error {
	g.park()
	return g.FS.Link(oldname, newname)
}

func (g *guardFS) Remove(name string) error {
	g.park()
	return g.FS.Remove(name)
}

func (g *guardFS) RemoveAll(name string) error {
	g.park()
	return g.FS.RemoveAll(name)
}

func (g *guardFS) Rename(oldname, newname string) error {
	g.park()
	return g.FS.Rename(oldname, newname)
}

func (g *guardFS) MkdirAll(dir string, perm os.FileMode) error {
	g.park()
	return g.FS.MkdirAll(dir, perm)
}

// guardFile is a file written through a guardFS. A WAL file remembers how
// much of it the last successful fsync covered.
type guardFile struct {
	vfs.File
	fs  *guardFS
	wal bool

	mu              sync.Mutex
	written, synced int64
	cut             bool // truncated by a fence: no more writes
}

func (f *guardFile) Write(p []byte) (int, error) {
	f.lock()
	defer f.mu.Unlock()
	n, err := f.File.Write(p)
	if err != nil {
		return n, f.failLocked(err)
	}
	f.written += int64(n)
	if !f.fs.durable {
		f.synced = f.written
	}
	return n, nil
}

func (f *guardFile) WriteAt(p []byte, off int64) (int, error) {
	f.lock()
	defer f.mu.Unlock()
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		return n, f.failLocked(err)
	}
	return n, nil
}

func (f *guardFile) Sync() error { return f.sync(f.File.Sync) }

func (f *guardFile) SyncData() error { return f.sync(f.File.SyncData) }

// SyncTo syncs a prefix; only a full sync moves the synced mark.
func (f *guardFile) SyncTo(length int64) (bool, error) {
	full := false
	err := f.sync(func() error {
		var err error
		full, err = f.File.SyncTo(length)
		return err
	})
	if err == nil && !full {
		return false, nil
	}
	return full, err
}

// lock takes f's lock, unless the files are fenced: then it parks,
// holding nothing, so that truncating f cannot wait for it.
func (f *guardFile) lock() {
	f.mu.Lock()
	if f.fs.fenced() != nil {
		f.mu.Unlock()
		select {}
	}
}

func (f *guardFile) sync(do func() error) error {
	f.lock()
	defer f.mu.Unlock()
	at := f.written
	if err := do(); err != nil {
		return f.failLocked(err)
	}
	f.synced = at
	return nil
}

// failLocked fences the store, f's lock held: f is cut back first, then
// the other WAL files.
func (f *guardFile) failLocked(err error) error {
	f.truncateLocked()
	f.fs.mu.Lock()
	delete(f.fs.wals, f)
	f.fs.mu.Unlock()
	return f.fs.fail(err)
}

func (f *guardFile) truncateToSynced() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.truncateLocked()
}

// truncateLocked cuts a WAL file back to its last fsync, so that no record
// whose fsync failed, and so was never acknowledged, is replayed later.
// Cutting needs no free space.
func (f *guardFile) truncateLocked() {
	if !f.wal || f.cut {
		return
	}
	f.cut = true
	if fd := f.File.Fd(); fd != vfs.InvalidFd {
		_ = unix.Ftruncate(int(fd), f.synced)
		_ = unix.Fdatasync(int(fd))
	}
}

func (f *guardFile) Close() error {
	f.fs.mu.Lock()
	delete(f.fs.wals, f)
	f.fs.mu.Unlock()
	return f.File.Close()
}

// sharedLockFS is the file system of the read-only instance a faulted
// store reads from: the read-write instance still holds the directory's
// lock, and the process keeps it until it exits.
type sharedLockFS struct{ vfs.FS }

func (sharedLockFS) Lock(string) (io.Closer, error) { return noLock{}, nil }

type noLock struct{}

func (noLock) Close() error { return nil }

// open opens the read-write instance over a guardFS. If opening it hits a
// write fault (a full disk cannot take the flush of the recovered WAL),
// the store opens read-only instead, faulted from the start: reads are
// served, writes refused. The fenced open never returns (its writes park),
// so it runs on a goroutine of its own.
func (s *Store) open() error {
	if err := s.checkWAL(); err != nil {
		return err
	}
	g := newGuardFS(s.fs, s.fail, s.writeO == pebble.Sync)
	s.guard = g
	opts := s.popts.Clone()
	opts.FS = g
	if s.gate != nil {
		opts.Experimental.CompactionScheduler = s.gate
	}
	type opened struct {
		db  *pebble.DB
		err error
	}
	done := make(chan opened, 1)
	go func() {
		db, err := pebble.Open(s.dir, opts)
		done <- opened{db, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && g.fenced() == nil {
			return lockError(s.dir, r.err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.err != nil { // failed and let go of the directory's lock
			return s.openReadOnly(s.fs)
		}
		s.db = r.db
		s.reads.Store(r.db)
		if s.fault.Load() != nil {
			return s.openReadOnly(sharedLockFS{s.fs})
		}
		return nil
	case <-s.faulted:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.openReadOnly(sharedLockFS{s.fs})
	}
}

// openReadOnly opens a read-only instance over fs, the committed state
// only, and sends reads to it. A store without a read-write instance
// writes through it too, where its fault refuses every write first.
func (s *Store) openReadOnly(fs vfs.FS) error {
	ro := s.popts.Clone()
	ro.ReadOnly = true
	ro.FS = fs
	db, err := pebble.Open(s.dir, ro)
	if err != nil {
		return fmt.Errorf("open read-only after %v: %w", s.fault.Load(), err)
	}
	if s.db == nil {
		s.db = db
	}
	s.reads.Store(db)
	return nil
}

// fail records f, the store's first write fault, and moves reads to a
// read-only instance over the fenced files, which shows the committed
// state only. It is guardFS's onFault, called from the goroutine whose
// write failed. Writers hear of the fault once both are done (reported),
// so that a client refused for it never reads a write in flight at that
// moment from the failed instance's memtable.
func (s *Store) fail(f *Fault) {
	if !s.fault.CompareAndSwap(nil, f) {
		return
	}
	if s.onFault != nil {
		s.onFault(f)
	}
	s.moveReads()
	close(s.faulted)
}

// moveReads sends reads to a read-only instance, unless the store is
// still opening (open does it then) or already reads from one.
func (s *Store) moveReads() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil || s.reader() != s.db { // still opening (open does it), or done
		return
	}
	if err := s.openReadOnly(sharedLockFS{s.fs}); err != nil {
		// Reads stay on the failed instance: keyed reads that meet a
		// write in flight refuse to answer (kvstore), and the engine reads
		// its committed view.
		fmt.Fprintf(os.Stderr, "surge: storage in %s: %v\n", s.dir, err)
	}
}

// Fault returns why the store refuses writes, or nil if it takes them.
func (s *Store) Fault() *Fault { return s.fault.Load() }

// reader is the Pebble instance reads go to.
func (s *Store) reader() *pebble.DB { return s.reads.Load() }

// reported returns the store's fault, nil if none, once OnFault has been
// told of it. Writers return a fault only through it: a client refused
// for a fault then finds it in the log, /readyz and /metrics, which the
// hook fills, even when another goroutine's write failed first and is
// still telling the hook.
func (s *Store) reported() *Fault {
	f := s.fault.Load()
	if f != nil {
		<-s.faulted
	}
	return f
}

// applyBatch applies b with o (waiting for its fsync unless noWait), or
// refuses it once the store is faulted. abandoned says Pebble may still
// hold b (see await): the caller must not close or reuse it.
func (s *Store) applyBatch(b *pebble.Batch, o *pebble.WriteOptions, noWait bool) (abandoned bool, err error) {
	if f := s.reported(); f != nil {
		return false, f
	}
	if noWait {
		return s.await(func() error { return s.db.ApplyNoSyncWait(b, o) })
	}
	return s.await(func() error { return s.db.Apply(b, o) })
}

// syncWAL waits for a WAL fsync covering every commit so far.
func (s *Store) syncWAL() error {
	if f := s.reported(); f != nil {
		return f
	}
	if s.popts.DisableWAL {
		return nil // no WAL: nothing becomes durable (Options.NoWAL)
	}
	_, err := s.await(func() error { return s.db.LogData(nil, pebble.Sync) })
	return err
}

// await runs call, a Pebble write that may wait for the WAL, and returns
// its error, or the store's fault if the store faults while it waits: the
// fence parks the WAL writer for good (guardFS), so a write in flight at
// that moment would wait forever, and its client with it. Then abandoned
// is true: the call goes on waiting, holding its batch, and the write it
// carried was never acknowledged (its WAL record, unsynced, is cut).
func (s *Store) await(call func() error) (abandoned bool, err error) {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer s.recoverFault(&err)
		err = s.writeErr(call())
	}()
	select {
	case err := <-done:
		return false, err
	case <-s.faulted:
	}
	select {
	case err := <-done:
		return false, err
	default:
		return true, s.reported()
	}
}

// writeErr is the error a write returns: the store's fault once it has
// one, since Pebble's own error then is a symptom of it.
func (s *Store) writeErr(err error) error {
	if err == nil {
		return nil
	}
	if f := s.reported(); f != nil {
		return f
	}
	return err
}

// recoverFault turns the panic Pebble raises on a failed commit (through
// pebbleLogger.Fatalf, or directly once its WAL writer has failed) into the
// store's fault. Any other panic goes on.
func (s *Store) recoverFault(err *error) {
	r := recover()
	if r == nil {
		return
	}
	f := s.reported()
	if f == nil {
		panic(r)
	}
	*err = f
}

// pebbleLogger keeps Pebble's informational chatter out of surge's output
// while still surfacing errors, and says a write fault once: a faulted
// store's background work fails again and again and is not logged.
type pebbleLogger struct{ s *Store }

func (pebbleLogger) Infof(string, ...any) {}

func (l pebbleLogger) Errorf(format string, args ...any) {
	if l.s.fault.Load() != nil {
		return
	}
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

// Fatalf is how Pebble gives up. A failed commit panics in the committing
// goroutine, where recoverFault turns it into an error. A failed commit
// leaves Pebble's commit pipeline broken for good, so one whose write
// error the guard did not record first fences the store here, as any
// write fault does. Once the store is faulted, its failed instance's
// background work (a flush writing the MANIFEST) may give up too: that
// goroutine stops for good, since the instance is abandoned and reads go
// elsewhere. Anything else is a bug and panics.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf("pebble: "+format, args...)
	commit := strings.HasPrefix(format, "pebble: fatal commit error")
	if commit && l.s.fault.Load() == nil && l.s.guard != nil {
		l.s.guard.fail(commitCause(msg, args))
	}
	if l.s.fault.Load() == nil || commit {
		panic(msg)
	}
	select {}
}

// commitCause is the error a fatal commit error carries, its message if
// it carries none.
func commitCause(msg string, args []any) error {
	for _, a := range args {
		if err, ok := a.(error); ok {
			return err
		}
	}
	return errors.New(msg)
}
