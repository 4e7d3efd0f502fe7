package changelog

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// Restate writes a key again as the copy holds it: a set as its value,
// an absent key as a delete, and a range delete as the range delete
// followed by every key its range holds in the partition's copy, no key
// of another partition nor past the range's end. A take's restore under
// way is read too, since the take's first write repairs what it read.
func TestRestateWritesTheCopysStateAgain(t *testing.T) {
	s, err := OpenSnapshots(t.TempDir(), kafkalog.Config{}, slog.New(slog.DiscardHandler), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(p int32, k, v string) kafkalog.Output {
		return kafkalog.Output{Kind: kafkalog.Change, Partition: p, Key: []byte(k), Value: append([]byte{opSet}, v...)}
	}
	if err := s.commit([]kafkalog.Output{set(0, "a", "1"), set(0, "b", "2"), set(0, "c", "3"), set(1, "b", "other")}, nil); err != nil {
		t.Fatal(err)
	}
	rangeKey := rangeDeleteKey(t, "a", "c")
	for _, tc := range []struct {
		key  []byte
		want string
	}{
		{[]byte("b"), `[b=s2]`},
		{[]byte("z"), `[z=<nil>]`},
		{rangeKey, fmt.Sprintf(`[%s=r a=s1 b=s2]`, rangeKey)},
	} {
		ups, err := s.Restate(0, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := updatesString(ups); got != tc.want {
			t.Errorf("Restate(%q) = %s, want %s", tc.key, got, tc.want)
		}
	}

	from, r, err := s.RestoreChain(context.Background(), 2)
	if err != nil || from.Offset != 0 {
		t.Fatalf("a restore of a partition with no copy: from %+v, %v", from, err)
	}
	defer r.Close()
	if err := r.Apply([]byte("k"), []byte{opSet, 'x'}); err != nil {
		t.Fatal(err)
	}
	if ups, err := s.Restate(2, []byte("k")); err != nil || updatesString(ups) != `[k=sx]` {
		t.Fatalf("Restate during the restore = %s, %v; want the restored k=sx", updatesString(ups), err)
	}
}

// rangeDeleteKey is the changelog key of a range delete of [start, end).
func rangeDeleteKey(t *testing.T, start, end string) []byte {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte(start), []byte(end), nil); err != nil {
		t.Fatal(err)
	}
	outs, err := Changes(nil, b, 0)
	if err != nil || len(outs) != 1 {
		t.Fatalf("a range delete's records: %v, %v", outs, err)
	}
	return outs[0].Key
}

func updatesString(ups []kafkalog.Update) string {
	s := "["
	for i, u := range ups {
		if i > 0 {
			s += " "
		}
		v := "<nil>"
		if u.Value != nil {
			v = string(u.Value)
		}
		s += string(u.Key) + "=" + v
	}
	return s + "]"
}
