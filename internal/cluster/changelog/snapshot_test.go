package changelog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A snapshot whose WAL was damaged in its middle (bytes flipped) is
// dropped, and the node goes on with an empty one; a snapshot another
// process holds is refused, not dropped.
func TestDamagedSnapshotIsDropped(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenSnapshots(dir, kafkalog.Config{}, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		out := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte(fmt.Sprint("k", i)), Value: append([]byte{opSet}, bytes.Repeat([]byte("v"), 4096)...)}
		if err := s.commit([]kafkalog.Output{out}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil { // the rounds reach the WAL
		t.Fatal(err)
	}
	if _, err := OpenSnapshots(dir, kafkalog.Config{}, logger, nil); err == nil {
		t.Fatal("a second process opened a held snapshot")
	}
	if v, ok, err := s.db.Get(snapKey(snapData, 0, []byte("k0"))); err != nil || !ok || len(v) != 4096 {
		t.Fatalf("the held snapshot lost its records: %v %v", ok, err)
	}
	s.Close()
	wals, _ := filepath.Glob(filepath.Join(dir, "snapshot", "*.log"))
	if len(wals) == 0 {
		t.Fatal("no WAL")
	}
	f, err := os.OpenFile(wals[len(wals)-1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 64), 1024); err != nil { // inside the first record
		t.Fatal(err)
	}
	f.Close()
	s, err = OpenSnapshots(dir, kafkalog.Config{}, logger, nil)
	if err != nil {
		t.Fatalf("a damaged snapshot is not dropped: %v", err)
	}
	defer s.Close()
	if _, ok, err := s.db.Get(snapKey(snapData, 0, []byte("k1"))); err != nil || ok {
		t.Fatalf("the damaged snapshot's records are still there: %v %v", ok, err)
	}
}
