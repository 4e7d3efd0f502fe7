package store

import (
	"fmt"
	"runtime"
	"testing"
)

// TestHoldCompactions fills level 0 past its compaction threshold in a
// store opened with HoldCompactions: no compaction runs until
// ReleaseCompactions, and then they do, leaving level 0 below it. The same
// writes without the hold are compacted as they come.
func TestHoldCompactions(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprint("hold=", hold), func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{HoldCompactions: hold, L0CompactionThreshold: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const flushes = 8
			for i := range flushes {
				b := s.NewBatch()
				for k := range 100 {
					_ = b.Set(fmt.Appendf(nil, "k%03d", k), fmt.Appendf(nil, "v%d", i), nil)
				}
				if err := s.Commit(b); err != nil {
					t.Fatal(err)
				}
				if err := s.db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			m := s.Metrics()
			if hold && (m.Compact.Count != 0 || m.Levels[0].TablesCount != flushes) {
				t.Fatalf("held: %d compactions, %d tables in L0, want 0 and %d", m.Compact.Count, m.Levels[0].TablesCount, flushes)
			}
			if !hold && m.Compact.Count == 0 {
				waitCompacted(t, s)
			}
			s.ReleaseCompactions()
			waitCompacted(t, s)
			if v, ok, err := s.Get([]byte("k042")); err != nil || !ok || string(v) != fmt.Sprint("v", flushes-1) {
				t.Fatalf("Get after compactions = %q %v %v", v, ok, err)
			}
		})
	}
}

// waitCompacted waits until a compaction has run and level 0 is below its
// threshold.
func waitCompacted(t *testing.T, s *Store) {
	t.Helper()
	for {
		m := s.Metrics()
		if m.Compact.Count > 0 && m.Levels[0].TablesCount < 2 {
			return
		}
		if t.Context().Err() != nil {
			t.Fatal("no compaction")
		}
		runtime.Gosched()
	}
}
