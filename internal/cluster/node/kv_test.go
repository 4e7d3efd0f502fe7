package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvapi"
	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/store"
)

// kvTranscript runs one key-value script against s: PUTs, replacing and
// deleting entries (present and absent), GETs, and ranges bounded, open,
// empty and across deletions, over keys of every partition; it returns
// each answer as a line.
func kvTranscript(t *testing.T, s kvapi.Store) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	wrote := func(what string, w kv.Write, err error) {
		if err == nil {
			err = w.Wait()
		}
		note("%s err=%v", what, err)
	}
	get := func(key string) {
		v, found, err := s.Get(ctx, key, nil)
		note("get %s = %q found=%v err=%v", key, v, found, err)
	}
	scan := func(start, end string) {
		it, err := s.Scan(ctx, start, end)
		if err != nil {
			note("range [%s, %s) err=%v", start, end, err)
			return
		}
		defer it.Close()
		var got []string
		for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
			got = append(got, string(k)+"="+string(v))
		}
		note("range [%s, %s) = %s err=%v", start, end, strings.Join(got, " "), it.Err())
	}
	for i := range 40 {
		key := fmt.Sprintf("k%02d", i)
		w, err := s.PutNoWait(ctx, key, []byte(fmt.Sprintf("v%d", i)))
		wrote("put "+key, w, err)
	}
	w, err := s.PutNoWait(ctx, "k07", []byte("again"))
	wrote("put k07", w, err)
	w, err = s.PutNoWait(ctx, "k08", nil)
	wrote("put k08 empty", w, err)
	for _, key := range []string{"k03", "k30", "absent"} {
		w, err := s.DeleteNoWait(ctx, key)
		wrote("delete "+key, w, err)
	}
	for _, key := range []string{"k00", "k03", "k07", "k08", "absent"} {
		get(key)
	}
	scan("k", "")
	scan("k05", "k12")
	scan("k29", "k32")
	scan("k50", "k60")
	scan("a", "b")
	return out
}

// The key-value entries of a cluster node answer the script as a single
// process's store does, line for line.
func TestClusterKVAnswersAsOneNode(t *testing.T) {
	db, err := kvstore.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	want := kvTranscript(t, kvstore.New(db, nil))
	got := kvTranscript(t, clusterNode(t).KV())
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("a cluster node answered, from line %d,\n%s\n\nthe single process\n%s", i+1,
				strings.Join(got[min(i, len(got)):], "\n"), strings.Join(want[min(i, len(want)):], "\n"))
		}
	}
}

// kvCall appends a client's key-value command for its key's partition,
// runs the rounds, and returns the decoded outcome.
func (r *rounds) kvCall(c kvstore.Command) kvstore.Command {
	r.t.Helper()
	r.seq++
	rid := fmt.Sprint("req", r.seq)
	v := append([]byte{calls.WorkloadKV}, kvstore.EncodeCommand(&c)...)
	r.waiting = append(r.waiting, kafkalog.Command{Partition: int32(part(c.Key)), Key: []byte("0:" + rid), Value: v})
	r.settle(false)
	if len(r.replies[rid]) != 1 {
		r.t.Fatalf("request %s has %d replies, want 1", rid, len(r.replies[rid]))
	}
	out := kvstore.Command{Op: c.Op}
	if err := kvstore.DecodeOutcome(&out, r.replies[rid][0]); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// A key-value command in the JSON of an earlier wire (a node of the
// earlier format still running) is answered as malformed and changes
// nothing; the binary command that follows it is applied.
func TestOwnerRefusesAKVCommandOfTheJSONWire(t *testing.T) {
	r := newRounds(t)
	rid := r.send(part("k"), calls.WorkloadKV, map[string]any{"op": "put", "key": "k", "value": []byte("old")})
	r.settle(false)
	if got := r.replies[rid]; len(got) != 1 || string(got[0]) != `{"fault":"malformed command"}` {
		t.Fatalf("the JSON command was answered %q", got)
	}
	if got := r.kvCall(kvstore.Command{Op: kvstore.OpGet, Key: "k"}); got.Found {
		t.Fatalf("the JSON command was applied: %q", got.Value)
	}
	r.kvCall(kvstore.Command{Op: kvstore.OpPut, Key: "k", Value: []byte("new")})
	if got := r.kvCall(kvstore.Command{Op: kvstore.OpGet, Key: "k"}); !got.Found || string(got.Value) != "new" {
		t.Fatalf("after a binary PUT, GET answered %+v", got)
	}
}
