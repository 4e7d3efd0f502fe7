package kvstore

import (
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
)

// Key-value entries in a cluster (docs/CLUSTER.md). An entry lives in the
// partition its key hashes to, as a ledger account does; the partition's
// owner applies GET, PUT and DELETE as commands in its rounds (the engine
// slices of ClusterSlices), so each key's operations are in one order and
// a GET answered after a PUT was acknowledged sees it (linearizable per
// key). A range is read in pages, each a command to one partition answered
// with the page's entries as of its round; the node that takes the request
// merges the partitions' pages in key order. The owner keeps the entries
// in its cache store under clusterPrefix, and each round's changes go to
// the partition's changelog like the ledger's.

// clusterPrefix begins the entries' keys in the owner's store.
var clusterPrefix = []byte("kc/")

func clusterKey(key string) []byte { return append(append([]byte(nil), clusterPrefix...), key...) }

// Op is a key-value command's operation, its first byte on the wire.
type Op uint8

// The operations of a Command.
const (
	OpGet Op = iota + 1
	OpPut
	OpDelete
	OpRange // a page of a range
)

// ReadOnly reports whether an operation changes nothing.
func (o Op) ReadOnly() bool { return o == OpGet || o == OpRange }

// MaxClusterValueBytes is the largest value a cluster stores: a PUT's
// Command, and a GET's outcome, carry the value in one Kafka record, whose
// default limit is 1 MiB, with room to spare.
const MaxClusterValueBytes = 640 << 10

// A range's page holds up to pageEntries entries or pageBytes of
// values (and at least one entry), so that its reply stays well below
// Kafka's default record size limit of 1 MiB.
const (
	pageEntries = 256
	pageBytes   = 256 << 10
)

// Entry is an entry of a range's page.
type Entry struct {
	Key   string
	Value []byte
}

// Command is a key-value command as the owner applies it: its operation,
// the arguments the operation takes and, once applied, its outcome
// (wire.go carries each operation's own fields only).
type Command struct {
	Op Op
	// Key is the entry's key, or where a range's page starts.
	Key string
	// Value is a PUT's value, or a GET's outcome with Found.
	Value []byte
	Found bool
	// Fault is why the owner could not read its store.
	Fault string
	// A range's page: [Key, End) (End "": to the last key); its entries,
	// and whether the partition has more from Next on.
	End     string
	Entries []Entry
	More    bool
	Next    string
}

// clusterSlice is the entries of one shard on its owner (an engine.Slice).
type clusterSlice struct {
	db *store.Store
	// shard is the slice's partition, of shards.
	shard, shards int
	// round holds the round's writes, nil for a delete; order, their keys
	// as first written.
	round map[string][]byte
	order []string
}

// ClusterSlices are the engine slices of a partition owner's entries in
// db, one per shard of shards.
func ClusterSlices(db *store.Store, shards int) []engine.Slice {
	out := make([]engine.Slice, shards)
	for i := range out {
		out[i] = &clusterSlice{db: db, shard: i, shards: shards, round: map[string][]byte{}}
	}
	return out
}

// Apply applies the round's commands in order; a GET sees the round's
// earlier writes.
func (s *clusterSlice) Apply(cmds []engine.Command, _ time.Time) {
	for _, c := range cmds {
		k, ok := c.(*Command)
		if !ok {
			continue // a Tick
		}
		switch k.Op {
		case OpGet:
			s.get(k)
		case OpRange:
			s.page(k)
		case OpPut, OpDelete:
			if _, seen := s.round[k.Key]; !seen {
				s.order = append(s.order, k.Key)
			}
			s.round[k.Key] = nil
			if k.Op == OpPut {
				s.round[k.Key] = append([]byte{}, k.Value...)
			}
			k.Value = nil
		}
	}
}

func (s *clusterSlice) get(k *Command) {
	if v, ok := s.round[k.Key]; ok {
		k.Value, k.Found = v, v != nil
		return
	}
	v, found, err := s.db.Get(clusterKey(k.Key))
	if err != nil {
		k.Fault = err.Error()
		return
	}
	k.Value, k.Found = v, found
}

// page reads a page of the slice's part of the range [k.Key, k.End):
// from the store, with the round's earlier writes over it.
func (s *clusterSlice) page(k *Command) {
	upper := store.UpperBound(clusterPrefix)
	if k.End != "" {
		upper = clusterKey(k.End)
	}
	size := 0
	err := s.db.Scan(clusterKey(k.Key), upper, false, func(key, v []byte) (bool, error) {
		id := string(key[len(clusterPrefix):])
		if engine.ShardIndex(id, s.shards) != s.shard { // another owned partition's
			return true, nil
		}
		k.Entries = append(k.Entries, Entry{Key: id, Value: append([]byte(nil), v...)})
		size += len(v)
		k.More = len(k.Entries) >= pageEntries || size >= pageBytes
		if k.More {
			k.Next = id + "\x00" // the least key after id
		}
		return !k.More, nil
	})
	if err != nil {
		k.Entries, k.Fault = nil, err.Error()
		return
	}
	s.overlay(k)
}

// overlay puts the round's writes within the page's keys over its entries.
func (s *clusterSlice) overlay(k *Command) {
	hi := k.End
	if k.More {
		hi = k.Next
	}
	merged := make(map[string][]byte, len(k.Entries))
	for _, e := range k.Entries {
		merged[e.Key] = e.Value
	}
	changed := false
	for key, v := range s.round {
		if key < k.Key || hi != "" && key >= hi {
			continue
		}
		changed = true
		if v == nil {
			delete(merged, key)
		} else {
			merged[key] = v
		}
	}
	if !changed {
		return
	}
	k.Entries = k.Entries[:0]
	for _, key := range slices.Sorted(maps.Keys(merged)) {
		k.Entries = append(k.Entries, Entry{Key: key, Value: merged[key]})
	}
}

// Size is the round's writes.
func (s *clusterSlice) Size() int { return len(s.order) }

// Receive has nothing to receive: entries never cross shards.
func (s *clusterSlice) Receive() {}

// Write adds the round's writes to b.
func (s *clusterSlice) Write(b *pebble.Batch) {
	for _, key := range s.order {
		if v := s.round[key]; v != nil {
			_ = b.Set(clusterKey(key), v, nil)
		} else {
			_ = b.Delete(clusterKey(key), nil)
		}
	}
}

// Publish has nothing to show: reads are commands.
func (s *clusterSlice) Publish(time.Time) {}

// Announce has nobody to tell.
func (s *clusterSlice) Announce() {}

// Finish forgets the round's writes, now in the store.
func (s *clusterSlice) Finish() time.Time {
	clear(s.round)
	s.order = s.order[:0]
	return time.Time{}
}
