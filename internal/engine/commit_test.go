package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recorder is a Committer that keeps, per round, the keys of each shard's
// batch, and fails rounds once fail is set.
type recorder struct {
	mu       sync.Mutex
	rounds   [][][]string
	forwards []Forward
	fail     error
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
	r.forwards = append(r.forwards, round.Forwards...)
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

// owing is a test slice that owes the next shard each put it applies.
type owing struct {
	*counter
	shards int
	owed   []Forward
}

func (o *owing) Apply(cmds []Command, now time.Time) {
	o.counter.Apply(cmds, now)
	for _, c := range cmds {
		if p, ok := c.(*put); ok {
			o.owed = append(o.owed, Forward{Shard: (o.id + 1) % o.shards, Cmd: p})
		}
	}
}

func (o *owing) Forwards(dst []Forward) []Forward {
	dst = append(dst, o.owed...)
	o.owed = o.owed[:0]
	return dst
}

// Under a Committer each forward a round leaves names the shard that owes
// it (From), which a cluster without transactions needs to send it only
// once that shard's write counts.
func TestForwardsNameTheShardThatOwesThem(t *testing.T) {
	const shards = 3
	rec := &recorder{}
	e, err := Open(Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Shards: shards, Commit: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var all []*counter
	slices := make([]Slice, shards)
	for i := range slices {
		c := &counter{id: i, all: &all, state: map[string]string{}, published: &sync.Map{}}
		all = append(all, c)
		slices[i] = &owing{counter: c, shards: shards}
	}
	p := e.Attach(slices)
	e.Start()
	for i := range 12 {
		key := fmt.Sprint("k", i)
		if err := p.Do(ctx, e.ShardOf(key), &put{key: key, value: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.forwards) != 12 {
		t.Fatalf("%d forwards, want 12", len(rec.forwards))
	}
	for _, f := range rec.forwards {
		if from := e.ShardOf(f.Cmd.(*put).key); f.From != from || f.Shard != (from+1)%shards {
			t.Errorf("forward of %s to shard %d from %d; its put ran on shard %d", f.Cmd.(*put).key, f.Shard, f.From, from)
		}
	}
}
