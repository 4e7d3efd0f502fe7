package kvstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
)

// kvRound applies cmds to shard's slice of db's entries, of shards, as an
// owner's round, and writes the round's records back.
func kvRound(t *testing.T, db *store.Store, shard, shards int, cmds ...engine.Command) {
	t.Helper()
	s := ClusterSlices(db, shards)[shard]
	s.Apply(cmds, time.Now())
	b := db.NewBatch()
	s.Write(b)
	if err := db.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	s.Finish()
}

// A partition's pages of a range hold its keys only, in order, page after
// page from Next, with the round's earlier PUTs and DELETEs over the
// store's entries.
func TestKVOwnerReadsItsPartOfARangeInPages(t *testing.T) {
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const shards = 2
	var puts [shards][]engine.Command
	mine := 0 // keys of shard 0 stored
	for i := range 1200 {
		key := fmt.Sprintf("k%04d", i)
		p := engine.ShardIndex(key, shards)
		puts[p] = append(puts[p], &Command{Op: OpPut, Key: key, Value: []byte(key)})
		if p == 0 {
			mine++
		}
	}
	for p := range shards {
		kvRound(t, db, p, shards, puts[p]...)
	}
	var added, deleted string // keys of shard 0: one new in the range's round, one stored
	for i := 0; added == "" || deleted == ""; i++ {
		if k := fmt.Sprintf("k%04d", i); engine.ShardIndex(k, shards) == 0 && deleted == "" {
			deleted = k
		} else if k := fmt.Sprintf("k%04da", i); engine.ShardIndex(k, shards) == 0 && added == "" {
			added = k
		}
	}
	var got []string
	next, pages := "k", 0
	for more := true; more; pages++ {
		page := &Command{Op: OpRange, Key: next, End: "l"}
		kvRound(t, db, 0, shards, &Command{Op: OpPut, Key: added, Value: []byte(added)}, &Command{Op: OpDelete, Key: deleted}, page)
		for _, e := range page.Entries {
			if engine.ShardIndex(e.Key, shards) != 0 || string(e.Value) != e.Key || len(got) > 0 && e.Key <= got[len(got)-1] {
				t.Fatalf("page %d: entry %q=%q after %d entries", pages, e.Key, e.Value, len(got))
			}
			got = append(got, e.Key)
		}
		next, more = page.Next, page.More
	}
	if pages < 2 || len(got) != mine {
		t.Fatalf("%d entries in %d pages, want %d (one added, one deleted) in 2 or more", len(got), pages, mine)
	}
	for _, k := range got {
		if k == deleted {
			t.Fatalf("deleted %s is in the range", k)
		}
	}
}
