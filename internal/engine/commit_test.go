package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// recorder is a Committer that keeps, per round, the keys of each shard's
// batch, and fails rounds once fail is set.
type recorder struct {
	mu     sync.Mutex
	rounds [][][]string
	fail   error
}

func (r *recorder) Commit(round *Round) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	keys := make([][]string, len(round.Batches))
	for i, b := range round.Batches {
		rd := b.Reader()
		for {
			_, k, _, ok, err := rd.Next()
			if err != nil || !ok {
				break
			}
			keys[i] = append(keys[i], string(k))
		}
	}
	r.rounds = append(r.rounds, keys)
	return nil
}

// Under a Committer each shard's changes reach it in that shard's own
// batch, and the store holds them after the call (as a cache).
func TestCommitterGetsEachShardsBatch(t *testing.T) {
	rec := &recorder{}
	e, p, _, _ := testWorkload(t, Config{Shards: 3, Commit: rec})
	for i := range 12 {
		key := fmt.Sprint("k", i)
		if err := p.Do(ctx, e.ShardOf(key), &put{key: key, value: "v"}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := e.Store().Get([]byte("test/" + key)); err != nil || !ok {
			t.Fatalf("%s not in the store after its call: %v %v", key, ok, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := 0
	for _, round := range rec.rounds {
		for shard, keys := range round {
			for _, k := range keys {
				seen++
				if got := e.ShardOf(k[len("test/"):]); got != shard {
					t.Errorf("%s in shard %d's batch, owned by %d", k, shard, got)
				}
			}
		}
	}
	if seen != 12 {
		t.Fatalf("committer saw %d changes, want 12", seen)
	}
}

// A round the Committer fails fails its calls, as a failed fsync does.
func TestCommitterFailureFailsTheRound(t *testing.T) {
	rec := &recorder{fail: errors.New("no quorum")}
	e, p, _, _ := testWorkload(t, Config{Shards: 2, Commit: rec})
	err := p.Do(ctx, e.ShardOf("k"), &put{key: "k", value: "v"})
	if err == nil {
		t.Fatal("a round the committer refused completed without error")
	}
	if _, ok, _ := e.Store().Get([]byte("test/k")); ok {
		t.Fatal("a refused round reached the store")
	}
}
