package changelog

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A batch's sets, deletes and range deletes, carried as changelog records
// and replayed into another store, give the same state.
func TestChangelogReplaysABatch(t *testing.T) {
	src, dst := memDB(t), memDB(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := dst.Set([]byte(k), []byte("old"), nil); err != nil {
			t.Fatal(err)
		}
	}
	b := src.NewBatch()
	_ = b.Set([]byte("a"), []byte("1"), nil)
	_ = b.Delete([]byte("b"), nil)
	_ = b.DeleteRange([]byte("c"), []byte("d"), nil)
	_ = b.Set([]byte("e"), nil, nil)
	outs, err := Changes(nil, b, 3)
	if err != nil {
		t.Fatal(err)
	}
	rb := dst.NewBatch()
	for _, o := range outs {
		if o.Partition != 3 {
			t.Fatalf("record for partition %d, want 3", o.Partition)
		}
		if err := Replay(rb, nil, o.Key, o.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := rb.Commit(nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "d": "old", "e": ""}
	got := map[string]string{}
	it, _ := dst.NewIter(nil)
	for it.First(); it.Valid(); it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	_ = it.Close()
	if len(got) != len(want) {
		t.Fatalf("replayed state %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("replayed state %v, want %v", got, want)
		}
	}
}

func memDB(t *testing.T) *pebble.DB {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
