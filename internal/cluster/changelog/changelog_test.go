package changelog

import (
	"maps"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A batch's sets, deletes and range deletes, carried as changelog records
// and replayed into another store, under a prefix or none, give the same
// state; the records do not point into the batch, which goes on to other
// rounds.
func TestChangelogReplaysABatch(t *testing.T) {
	for _, prefix := range []string{"", "p/"} {
		src, dst := memDB(t), memDB(t)
		for _, k := range []string{"a", "b", "c", "d"} {
			if err := dst.Set([]byte(prefix+k), []byte("old"), nil); err != nil {
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
		b.Reset()
		_ = b.Set([]byte("x"), []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), nil)
		rb := dst.NewBatch()
		for _, o := range outs {
			if o.Partition != 3 {
				t.Fatalf("record for partition %d, want 3", o.Partition)
			}
			if err := Replay(rb, []byte(prefix), o.Key, o.Value); err != nil {
				t.Fatal(err)
			}
		}
		if err := rb.Commit(nil); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{prefix + "a": "1", prefix + "d": "old", prefix + "e": ""}
		got := map[string]string{}
		it, _ := dst.NewIter(nil)
		for it.First(); it.Valid(); it.Next() {
			got[string(it.Key())] = string(it.Value())
		}
		_ = it.Close()
		if !maps.Equal(got, want) {
			t.Fatalf("prefix %q: replayed state %v, want %v", prefix, got, want)
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
