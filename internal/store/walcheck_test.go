package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walWithRecords writes n key-value entries, each in its own fsynced
// commit, to a store in a new directory and leaves it as a crash would
// (the store is not closed: a closed store rotates no WAL, but this keeps
// the test about what a kill -9 leaves). It returns the directory and the
// newest WAL.
func walWithRecords(t *testing.T, n int) (dir, wal string) {
	t.Helper()
	dir = t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := put(s, fmt.Sprintf("k%03d", i), []byte(fmt.Sprintf("value-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	cp := copyDir(t, dir) // the copy is what the crash left; s keeps its lock
	t.Cleanup(func() { _ = s.Close() })
	wal, _, ok, err := newestWAL(cp)
	if err != nil || !ok {
		t.Fatalf("no WAL in %s: %v", cp, err)
	}
	return cp, wal
}

func countKV(t *testing.T, s *Store, n int) int {
	t.Helper()
	found := 0
	for i := range n {
		ok, err := s.GetFunc([]byte(fmt.Sprintf("k%03d", i)), func([]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			found++
		}
	}
	return found
}

// TestWALTornTailIsDropped: a WAL cut in the middle of its last record, as
// a crash mid-write leaves it, opens with every whole record.
func TestWALTornTailIsDropped(t *testing.T) {
	dir, wal := walWithRecords(t, 50)
	st, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(wal, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a torn tail must open: %v", err)
	}
	defer s.Close()
	if got := countKV(t, s, 50); got != 49 {
		t.Fatalf("%d entries after a torn tail, want 49", got)
	}
}

// TestWALDamageRefusesToOpen flips one byte in the middle of a WAL, in a
// stopped store: opening must fail naming the file and the offset, and
// with AcceptWALLoss it opens with the records before the damage.
func TestWALDamageRefusesToOpen(t *testing.T) {
	dir, wal := walWithRecords(t, 50)
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	at := len(b) / 3
	b[at] ^= 0x40
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	var d *WALDamage
	if !errors.As(err, &d) {
		t.Fatalf("opening over a flipped byte: %v, want a WALDamage", err)
	}
	if d.File != wal || d.Offset > int64(at) || d.Valid <= int64(at) {
		t.Fatalf("damage %+v, want file %s, offset <= %d < valid", d, wal, at)
	}
	t.Logf("refused: %v", err)
	s, err := Open(dir, Options{AcceptWALLoss: true})
	if err != nil {
		t.Fatalf("accepting the loss: %v", err)
	}
	defer s.Close()
	if got := countKV(t, s, 50); got == 0 || got >= 50 {
		t.Fatalf("%d entries after accepting the loss, want those before the damage", got)
	}
}

// lastChunk is where the newest WAL's last valid chunk starts and ends.
func lastChunk(t *testing.T, wal string) (start, end int64, data []byte) {
	t.Helper()
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	_, num, _, err := newestWAL(filepath.Dir(wal))
	if err != nil {
		t.Fatal(err)
	}
	_, invalid := replayable(data, num)
	for p := int64(0); p < invalid; {
		next, _, ok := chunkAt(data, p, num)
		if !ok {
			p++ // a block's zero padding
			continue
		}
		start, end = p, next
		p = next
	}
	return start, end, data
}

// TestWALLastRecordDamageRefusesToOpen: a byte flipped in the WAL's last
// record, which lies within one 512-byte sector (so no crash tore it),
// makes Open refuse, naming the record; AcceptWALLoss opens without it.
func TestWALLastRecordDamageRefusesToOpen(t *testing.T) {
	var dir, wal string
	var start, end int64
	var data []byte
	for n := 50; ; n++ { // until the last record does not cross a sector
		dir, wal = walWithRecords(t, n)
		if start, end, data = lastChunk(t, wal); start/walSector == (end-1)/walSector {
			break
		}
	}
	data[end-2] ^= 0x40
	if err := os.WriteFile(wal, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	var d *WALDamage
	if !errors.As(err, &d) || d.Valid != 0 || d.Offset != start || d.End != end {
		t.Fatalf("opening over a flipped last record at %d-%d: %v, want a WALDamage naming it", start, end, err)
	}
	t.Logf("refused: %v", err)
	s, err := Open(dir, Options{AcceptWALLoss: true})
	if err != nil {
		t.Fatalf("accepting the loss: %v", err)
	}
	_ = s.Close()
}

// TestWALTornLastRecordAcrossSectorsOpens: a last record spanning
// sectors whose checksum fails may be a torn write; it is dropped (and
// said on stderr), as before.
func TestWALTornLastRecordAcrossSectorsOpens(t *testing.T) {
	live := t.TempDir()
	s, err := Open(live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"a", "b", strings.Repeat("c", 2*walSector)} {
		if err := put(s, fmt.Sprint(i), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	dir := copyDir(t, live)
	t.Cleanup(func() { _ = s.Close() })
	wal, _, _, err := newestWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, end, data := lastChunk(t, wal)
	data[end-1] ^= 0x40
	if err := os.WriteFile(wal, data, 0o644); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a last record torn across sectors must open: %v", err)
	}
	_ = reopened.Close()
}
