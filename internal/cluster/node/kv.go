package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/store"
)

// Key-value entries in a cluster. An entry lives in the partition its key
// hashes to, as a ledger account does; its owner applies GET, PUT and
// DELETE as commands in its rounds, so each key's operations are in one
// order and a GET answered after a PUT was acknowledged sees it
// (linearizable per key). A range is read in pages, each a command to one
// partition answered with the page's entries as of its round; the node
// that takes the request merges the partitions' pages in key order. The owner keeps the entries in its cache store
// under kvPrefix, and each round's changes go to the partition's changelog
// like the ledger's.

// kvPrefix begins the entries' keys in the owner's store.
var kvPrefix = []byte("kc/")

func kvKey(key string) []byte { return append(append([]byte(nil), kvPrefix...), key...) }

// Key-value operations on the wire.
const (
	kvGet    = "get"
	kvPut    = "put"
	kvDelete = "delete"
	kvRange  = "range"
)

// MaxKVValueBytes is the largest value a cluster stores: a PUT's command,
// and a GET's reply, carry the value in one Kafka record, whose default
// limit is 1 MiB, in JSON (base64, a third larger) with room to spare.
const MaxKVValueBytes = 640 << 10

// A range's page holds up to rangePageEntries entries or rangePageBytes of
// values (and at least one entry), so that its reply stays well below
// Kafka's default record size limit of 1 MiB.
const (
	rangePageEntries = 256
	rangePageBytes   = 256 << 10
)

// kvEntry is an entry of a range's page.
type kvEntry struct {
	Key   string `json:"k"`
	Value []byte `json:"v"`
}

// kvCommand is a key-value command, on the wire and as the owner applies
// it (its outcome in Found and Value).
type kvCommand struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value []byte `json:"value,omitempty"`
	Found bool   `json:"found,omitempty"`
	Fault string `json:"fault,omitempty"`
	// A range's page: [Key, End) (End "": to the last key); its entries,
	// and whether the partition has more from Next on.
	End     string    `json:"end,omitempty"`
	Entries []kvEntry `json:"entries,omitempty"`
	More    bool      `json:"more,omitempty"`
	Next    string    `json:"next,omitempty"`
}

// kvSlice is the entries of one shard on its owner (an engine.Slice).
type kvSlice struct {
	db *store.Store
	// shard is the slice's partition, of shards.
	shard, shards int
	// round holds the round's writes, nil for a delete; order, their keys
	// as first written.
	round map[string][]byte
	order []string
}

func newKVSlices(db *store.Store, shards int) []engine.Slice {
	out := make([]engine.Slice, shards)
	for i := range out {
		out[i] = &kvSlice{db: db, shard: i, shards: shards, round: map[string][]byte{}}
	}
	return out
}

// Apply applies the round's commands in order; a GET sees the round's
// earlier writes.
func (s *kvSlice) Apply(cmds []engine.Command, _ time.Time) {
	for _, c := range cmds {
		k, ok := c.(*kvCommand)
		if !ok {
			continue // a Tick
		}
		switch k.Op {
		case kvGet:
			s.get(k)
		case kvRange:
			s.page(k)
		case kvPut, kvDelete:
			if _, seen := s.round[k.Key]; !seen {
				s.order = append(s.order, k.Key)
			}
			s.round[k.Key] = nil
			if k.Op == kvPut {
				s.round[k.Key] = append([]byte{}, k.Value...)
			}
			k.Value = nil
		}
	}
}

func (s *kvSlice) get(k *kvCommand) {
	if v, ok := s.round[k.Key]; ok {
		k.Value, k.Found = v, v != nil
		return
	}
	v, found, err := s.db.Get(kvKey(k.Key))
	if err != nil {
		k.Fault = err.Error()
		return
	}
	k.Value, k.Found = v, found
}

// page reads a page of the slice's part of the range [k.Key, k.End):
// from the store, with the round's earlier writes over it.
func (s *kvSlice) page(k *kvCommand) {
	upper := store.UpperBound(kvPrefix)
	if k.End != "" {
		upper = kvKey(k.End)
	}
	size := 0
	err := s.db.Scan(kvKey(k.Key), upper, false, func(key, v []byte) (bool, error) {
		id := string(key[len(kvPrefix):])
		if engine.ShardIndex(id, s.shards) != s.shard { // another owned partition's
			return true, nil
		}
		k.Entries = append(k.Entries, kvEntry{Key: id, Value: append([]byte(nil), v...)})
		size += len(v)
		k.More = len(k.Entries) >= rangePageEntries || size >= rangePageBytes
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
func (s *kvSlice) overlay(k *kvCommand) {
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
		k.Entries = append(k.Entries, kvEntry{Key: key, Value: merged[key]})
	}
}

// Size is the round's writes.
func (s *kvSlice) Size() int { return len(s.order) }

// Receive has nothing to receive: entries never cross shards.
func (s *kvSlice) Receive() {}

// Write adds the round's writes to b.
func (s *kvSlice) Write(b *pebble.Batch) {
	for _, key := range s.order {
		if v := s.round[key]; v != nil {
			_ = b.Set(kvKey(key), v, nil)
		} else {
			_ = b.Delete(kvKey(key), nil)
		}
	}
}

// Publish has nothing to show: reads are commands.
func (s *kvSlice) Publish(time.Time) {}

// Announce has nobody to tell.
func (s *kvSlice) Announce() {}

// Finish forgets the round's writes, now in the store.
func (s *kvSlice) Finish() time.Time {
	clear(s.round)
	s.order = s.order[:0]
	return time.Time{}
}

// KV is the key-value entries as a node's clients see them (a
// kvapi.Store): each call is a command to the partition owning its key.
type KV struct {
	k          *caller
	partitions int
}

func (e *KV) do(ctx context.Context, c *kvCommand) (*kvCommand, error) {
	return e.doOn(ctx, engine.ShardIndex(c.Key, e.partitions), c)
}

// doOn sends c to partition and returns its outcome. A partition that did
// not answer is kv.ErrUnavailable.
func (e *KV) doOn(ctx context.Context, partition int, c *kvCommand) (*kvCommand, error) {
	var out kvCommand
	if err := e.k.callJSON(ctx, partition, workloadKV, c, &out); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
		}
		return nil, err
	}
	if out.Fault != "" {
		return nil, errors.New("cluster: " + out.Fault)
	}
	return &out, nil
}

// ErrUnavailable reports a command its partition's owner did not answer in
// time: the client may retry.
var ErrUnavailable = errors.New("cluster: partition unavailable")

// Get returns key's value appended to dst, or found false.
func (e *KV) Get(ctx context.Context, key string, dst []byte) (value []byte, found bool, err error) {
	out, err := e.do(ctx, &kvCommand{Op: kvGet, Key: key})
	if err != nil {
		return nil, false, err
	}
	return append(dst, out.Value...), out.Found, nil
}

// PutNoWait stores value under key; it returns once the write is
// committed, so its Wait has nothing left to wait for.
func (e *KV) PutNoWait(ctx context.Context, key string, value []byte) (kv.Write, error) {
	_, err := e.do(ctx, &kvCommand{Op: kvPut, Key: key, Value: value})
	return committed{}, err
}

// DeleteNoWait removes key, returning as PutNoWait does.
func (e *KV) DeleteNoWait(ctx context.Context, key string) (kv.Write, error) {
	_, err := e.do(ctx, &kvCommand{Op: kvDelete, Key: key})
	return committed{}, err
}

// committed is a write its owner committed before answering.
type committed struct{}

// Wait returns at once: the write is durable.
func (committed) Wait() error { return nil }

// Scan opens the entries of [start, end) (end "": to the last key) in key
// order: it reads each partition's first page at once, then the next page
// of a partition when the merge has taken its last. Each page is as of its
// partition's round, so a range is not one snapshot of the cluster: an
// entry written while it runs may or may not be in it.
func (e *KV) Scan(ctx context.Context, start, end string) (kv.Entries, error) {
	r := &Range{kv: e, ctx: ctx, end: end, parts: make([]rangePart, e.partitions)}
	errs := make([]error, len(r.parts))
	var wg sync.WaitGroup
	for p := range r.parts {
		r.parts[p] = rangePart{partition: p, next: start, more: true}
		wg.Go(func() { errs[p] = r.fill(&r.parts[p]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Range is a key range being read from every partition (a kv.Entries).
type Range struct {
	kv    *KV
	ctx   context.Context
	end   string
	parts []rangePart
	err   error
}

// rangePart is a partition's page being merged, and where its next starts.
type rangePart struct {
	partition int
	entries   []kvEntry
	next      string
	more      bool
}

// fill reads p's next page if the merge took all of its last one.
func (r *Range) fill(p *rangePart) error {
	for len(p.entries) == 0 && p.more {
		out, err := r.kv.doOn(r.ctx, p.partition, &kvCommand{Op: kvRange, Key: p.next, End: r.end})
		if err != nil {
			return err
		}
		p.entries, p.next, p.more = out.Entries, out.Next, out.More
	}
	return nil
}

// Next returns the least key of the partitions' pages, or ok false at the
// end of the range or if a partition failed (Err).
func (r *Range) Next() (key, value []byte, ok bool) {
	if r.err != nil {
		return nil, nil, false
	}
	best := -1
	for i := range r.parts {
		p := &r.parts[i]
		if r.err = r.fill(p); r.err != nil {
			return nil, nil, false
		}
		if len(p.entries) > 0 && (best < 0 || p.entries[0].Key < r.parts[best].entries[0].Key) {
			best = i
		}
	}
	if best < 0 {
		return nil, nil, false
	}
	e := r.parts[best].entries[0]
	r.parts[best].entries = r.parts[best].entries[1:]
	return []byte(e.Key), e.Value, true
}

// Err is why Next stopped early, if it did.
func (r *Range) Err() error { return r.err }

// Close ends the range; it holds nothing on the owners.
func (r *Range) Close() error { return nil }
