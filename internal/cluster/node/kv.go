package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
)

// Key-value entries in a cluster. An entry lives in the partition its key
// hashes to, as a ledger account does; its owner applies GET, PUT and
// DELETE as commands in its rounds, so each key's operations are in one
// order and a GET answered after a PUT was acknowledged sees it
// (linearizable per key). The owner keeps the entries in its cache store
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
)

// kvCommand is a key-value command, on the wire and as the owner applies
// it (its outcome in Found and Value).
type kvCommand struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value []byte `json:"value,omitempty"`
	Found bool   `json:"found,omitempty"`
	Fault string `json:"fault,omitempty"`
}

// kvSlice is the entries of one shard on its owner (an engine.Slice).
type kvSlice struct {
	db *store.Store
	// round holds the round's writes, nil for a delete; order, their keys
	// as first written.
	round map[string][]byte
	order []string
}

func newKVSlices(db *store.Store, shards int) []engine.Slice {
	out := make([]engine.Slice, shards)
	for i := range out {
		out[i] = &kvSlice{db: db, round: map[string][]byte{}}
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

// KV is the key-value entries as a node's clients see them: each call is a
// command to the partition owning its key.
type KV struct {
	k          *caller
	partitions int
}

func (kv *KV) do(ctx context.Context, c *kvCommand) (*kvCommand, error) {
	v, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	b, err := kv.k.call(ctx, engine.ShardIndex(c.Key, kv.partitions), append([]byte{workloadKV}, v...))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var out kvCommand
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("cluster: decoding a reply: %w", err)
	}
	if out.Fault != "" {
		return nil, errors.New("cluster: " + out.Fault)
	}
	return &out, nil
}

// ErrUnavailable reports a command its partition's owner did not answer in
// time: the client may retry.
var ErrUnavailable = errors.New("cluster: partition unavailable")

// Get returns key's value, or found false.
func (kv *KV) Get(ctx context.Context, key string) (value []byte, found bool, err error) {
	out, err := kv.do(ctx, &kvCommand{Op: kvGet, Key: key})
	if err != nil {
		return nil, false, err
	}
	return out.Value, out.Found, nil
}

// Put stores value under key; it returns once the write is committed.
func (kv *KV) Put(ctx context.Context, key string, value []byte) error {
	_, err := kv.do(ctx, &kvCommand{Op: kvPut, Key: key, Value: value})
	return err
}

// Delete removes key; it returns once the removal is committed.
func (kv *KV) Delete(ctx context.Context, key string) error {
	_, err := kv.do(ctx, &kvCommand{Op: kvDelete, Key: key})
	return err
}
