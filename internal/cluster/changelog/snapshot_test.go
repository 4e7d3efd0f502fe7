package changelog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A snapshot whose table file was damaged (bytes flipped in a data block,
// which no read had needed yet) is dropped, and the node goes on with an
// empty one; a snapshot another process holds is refused, not dropped.
func TestDamagedSnapshotIsDropped(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenSnapshots(dir, kafkalog.Config{}, logger, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		out := kafkalog.Output{Kind: kafkalog.Change, Partition: 0, Key: []byte(fmt.Sprint("k", i)), Value: append([]byte{opSet}, bytes.Repeat([]byte("v"), 4096)...)}
		if err := s.commit([]kafkalog.Output{out}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil { // the rounds reach the memtable
		t.Fatal(err)
	}
	if _, err := OpenSnapshots(dir, kafkalog.Config{}, logger, SnapshotOptions{}); err == nil {
		t.Fatal("a second process opened a held snapshot")
	}
	if v, ok, err := s.db.Get(snapKey(snapData, 0, []byte("k0"))); err != nil || !ok || len(v) != 4096 {
		t.Fatalf("the held snapshot lost its records: %v %v", ok, err)
	}
	s.Close() // writes the records to a table file
	tables, _ := filepath.Glob(filepath.Join(dir, "snapshot", "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("the closed snapshot has table files %v, want one", tables)
	}
	f, err := os.OpenFile(tables[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 64), 64<<10); err != nil { // in the data blocks
		t.Fatal(err)
	}
	f.Close()
	s, err = OpenSnapshots(dir, kafkalog.Config{}, logger, SnapshotOptions{})
	if err != nil {
		t.Fatalf("a damaged snapshot is not dropped: %v", err)
	}
	defer s.Close()
	if _, ok, err := s.db.Get(snapKey(snapData, 0, []byte("k0"))); err != nil || ok {
		t.Fatalf("the damaged snapshot's records are still there: %v %v", ok, err)
	}
}

// A copy that a kill -9 or a power cut stops at any moment (Pebble's
// crashable file system, cloned as a crash would leave it: every write,
// none that was not synced, or some) holds, per partition with a meta, the
// state the counted rounds up to its offset make, and its meta's chain
// state is at that offset: it keeps no WAL, and its flushes persist whole
// commits, each with the metas of its changes.
func TestKilledCopyIsAConsistentPrefix(t *testing.T) {
	const parts, keys, rounds, perRound = 4, 64, 1500, 24
	fs := vfs.NewCrashableMem()
	o := SnapshotOptions{FS: fs, MemTableBytes: 256 << 10}
	s, err := OpenSnapshots("/node", kafkalog.Config{}, slog.New(slog.DiscardHandler), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	restoreParts(t, s, parts)
	rng := rand.New(rand.NewPCG(3, 4))
	var history [][]kafkalog.Output // history[i] is round i+1's changes
	states := map[int32]kafkalog.ChainState{}
	checked := 0
	for i := 1; i <= rounds; i++ {
		outs := randomRound(rng, i, parts, keys, perRound)
		history = append(history, outs)
		for p := range int32(parts) {
			states[p] = kafkalog.ChainState{Offset: int64(i)}
		}
		if err := s.CommitChain(outs, states); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			pct := []int{0, 100, rng.IntN(100)}[i/100%3]
			checked += checkCrashed(t, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng}), o, history, parts)
		}
	}
	if checked == 0 {
		t.Fatal("no crash left a partition's copy past its restore")
	}
}

// restoreParts gives partitions 0 to n-1 of s a meta at the changelog's
// start, as a take's restore does, so that counted rounds move them.
func restoreParts(t *testing.T, s *Snapshots, n int32) {
	t.Helper()
	b := s.db.NewBatch()
	for p := range n {
		st := kafkalog.LogStart()
		if err := setMeta(b, p, kafkalog.Snapshot{Chain: &st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.write(b); err != nil {
		t.Fatal(err)
	}
}

// randomRound is round i's changes: sets of value i and deletes of keys
// of the partitions, and a range delete now and then.
func randomRound(rng *rand.Rand, i, parts, keys, n int) []kafkalog.Output {
	outs := make([]kafkalog.Output, 0, n)
	for range n {
		o := kafkalog.Output{Kind: kafkalog.Change, Partition: int32(rng.IntN(parts)), Key: fmt.Appendf(nil, "k%03d", rng.IntN(keys))}
		switch r := rng.IntN(40); {
		case r == 0:
			from, to := rng.IntN(keys), rng.IntN(keys)
			o.Key = rangeKey(fmt.Appendf(nil, "k%03d", min(from, to)), fmt.Appendf(nil, "k%03d", max(from, to)))
			o.Value = []byte{opRange}
		case r < 8:
		default:
			o.Value = append(append([]byte{opSet}, fmt.Sprint(i, "-")...), bytes.Repeat([]byte("v"), 100)...)
		}
		outs = append(outs, o)
	}
	return outs
}

// checkCrashed opens the copy on fs, a crash's clone, and checks each
// partition with a meta against the rounds of history up to its offset;
// it returns how many partitions are past their restore.
func checkCrashed(t *testing.T, fs vfs.FS, o SnapshotOptions, history [][]kafkalog.Output, parts int) int {
	t.Helper()
	o.FS = fs
	s, err := OpenSnapshots("/node", kafkalog.Config{}, slog.New(slog.DiscardHandler), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	past := 0
	for p := range int32(parts) {
		m, ok, err := s.storedMeta(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		if m.Chain == nil || m.Chain.Offset != m.Offset || m.Offset > int64(len(history)) {
			t.Fatalf("partition %d's copy covers offset %d with chain state %+v, after %d rounds", p, m.Offset, m.Chain, len(history))
		}
		if m.Offset > 0 {
			past++
		}
		got, want := copyOf(t, s, p), replayed(t, history[:m.Offset], p)
		if !maps.Equal(got, want) {
			t.Fatalf("partition %d's copy at offset %d holds %d keys unlike the %d its rounds make", p, m.Offset, len(got), len(want))
		}
	}
	return past
}

// copyOf is partition p's records in s.
func copyOf(t *testing.T, s *Snapshots, p int32) map[string]string {
	t.Helper()
	got := map[string]string{}
	prefix := snapKey(snapData, p, nil)
	err := s.db.Scan(prefix, snapKey(snapData, p+1, nil), false, func(k, v []byte) (bool, error) {
		got[string(k[len(prefix):])] = string(v)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// replayed is the state of partition p that rounds make.
func replayed(t *testing.T, rounds [][]kafkalog.Output, p int32) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, outs := range rounds {
		for _, o := range outs {
			if o.Partition != p {
				continue
			}
			start, end, isRange, err := rangeOf(o.Key)
			switch {
			case err != nil:
				t.Fatal(err)
			case isRange:
				maps.DeleteFunc(state, func(k, _ string) bool { return k >= string(start) && k < string(end) })
			case len(o.Value) == 0:
				delete(state, string(o.Key))
			default:
				state[string(o.Key)] = string(o.Value[1:])
			}
		}
	}
	return state
}

// rangeKey is the changelog key of a range delete of [start, end).
func rangeKey(start, end []byte) []byte {
	return append(append(binary.AppendUvarint([]byte{rangeMark}, uint64(len(start))), start...), end...)
}
