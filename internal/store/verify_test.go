package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestVerifyTables finds no damage in whole tables, and names the table
// whose byte was flipped on disk.
func TestVerifyTables(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 2 {
		b := s.NewBatch()
		for k := range 2000 {
			_ = b.Set(fmt.Appendf(nil, "k%d-%05d", i, k), fmt.Appendf(nil, "value %d", k), nil)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.VerifyTables(t.Context()); err != nil {
		t.Fatalf("VerifyTables over whole tables: %v", err)
	}
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no table: %v", err)
	}
	victim := tables[len(tables)-1]
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x40
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var damage *TableDamage
	if err := s.VerifyTables(t.Context()); !errors.As(err, &damage) || damage.Path != victim {
		t.Fatalf("VerifyTables after flipping a byte of %s: %v", victim, err)
	}
}
