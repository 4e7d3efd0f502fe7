package changelog

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// roundBatch is a batch shaped like a ledger round's on one shard: 30
// transfer records, a journal record and a few account tails.
func roundBatch(b *testing.B, round int) [][2][]byte {
	b.Helper()
	var kvs [][2][]byte
	for i := range 30 {
		kvs = append(kvs, [2][]byte{[]byte(fmt.Sprintf("lt/fca95eb8-%d-%d", i, round)), make([]byte, 38)})
	}
	kvs = append(kvs, [2][]byte{[]byte(fmt.Sprintf("lj/%016d", round)), make([]byte, 1200)})
	for i := range 4 {
		kvs = append(kvs, [2][]byte{[]byte(fmt.Sprintf("lc/bench-%d", i)), make([]byte, 6)})
	}
	return kvs
}

// BenchmarkRoundChanges turns a round's batches of 6 shards into changelog
// records and adds them to the local snapshot, as a node does per round.
//
//	go test -run '^$' -bench RoundChanges -benchmem ./internal/cluster/changelog/
func BenchmarkRoundChanges(b *testing.B) {
	s, err := OpenSnapshots(b.TempDir(), kafkalog.Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	db := memDB(b)
	rounds := make([][][2][]byte, 64)
	for i := range rounds {
		rounds[i] = roundBatch(b, i)
	}
	b.ResetTimer()
	for n := range b.N {
		var outs []kafkalog.Output
		for p := range int32(6) {
			batch := db.NewBatch()
			for _, kv := range rounds[(n*6+int(p))%len(rounds)] {
				_ = batch.Set(kv[0], kv[1], nil)
			}
			if outs, err = Changes(outs, batch, p); err != nil {
				b.Fatal(err)
			}
			_ = batch.Close()
		}
		if err := s.Commit(outs, nil); err != nil {
			b.Fatal(err)
		}
	}
}
