// Package changelog restores the state of the partitions a surge cluster
// node owns (docs/CLUSTER.md): the changelog records a round's storage
// batches become, and the node's local snapshot of them, from which, with
// the records after it, a partition's state is rebuilt.
package changelog

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A shard's changelog partition holds its storage batches' operations, one
// record each, keyed so that compaction keeps the latest of each key:
//
//   - a set: the storage key, the value prefixed with opSet;
//   - a delete: the storage key, no value (a Kafka tombstone);
//   - a range delete: rangeMark, the start key's length (uvarint), start
//     and end keys; the value is opRange alone.
//
// Replayed in offset order into an empty store they give the shard's
// state: compaction drops only records a later one of the same key
// supersedes.

const (
	opSet   byte = 's'
	opRange byte = 'r'
	// rangeMark begins the key of a range delete; no storage key begins
	// with 0xff.
	rangeMark byte = 0xff
)

// Changes appends the records of batch b, shard partition's changes, to out.
func Changes(out []kafkalog.Output, b *pebble.Batch, partition int32) ([]kafkalog.Output, error) {
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("changelog: reading a round's batch: %w", err)
		}
		if !ok {
			return out, nil
		}
		o := kafkalog.Output{Kind: kafkalog.Change, Partition: partition}
		switch kind {
		case pebble.InternalKeyKindSet:
			o.Key, o.Value = clone(k), append([]byte{opSet}, v...)
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete:
			o.Key = clone(k)
		case pebble.InternalKeyKindRangeDelete:
			key := binary.AppendUvarint([]byte{rangeMark}, uint64(len(k)))
			o.Key, o.Value = append(append(key, k...), v...), []byte{opRange}
		default:
			return nil, fmt.Errorf("changelog: a round wrote a %s, which the changelog does not carry", kind)
		}
		out = append(out, o)
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// Replay adds the operation of the changelog record key/value to b, on
// the keys the record names preceded by prefix.
func Replay(b *pebble.Batch, prefix, key, value []byte) error {
	switch {
	case len(value) == 0:
		return b.Delete(prefixed(prefix, key), nil)
	case value[0] == opSet:
		return b.Set(prefixed(prefix, key), value[1:], nil)
	case value[0] == opRange && len(key) > 0 && key[0] == rangeMark:
		n, w := binary.Uvarint(key[1:])
		if w <= 0 || uint64(len(key)-1-w) < n {
			return fmt.Errorf("changelog: malformed range delete in the changelog")
		}
		start := key[1+w : 1+w+int(n)]
		return b.DeleteRange(prefixed(prefix, start), prefixed(prefix, key[1+w+int(n):]), nil)
	}
	return fmt.Errorf("changelog: changelog record of unknown kind %q", value[0])
}

// prefixed is key preceded by prefix (key itself if there is none).
func prefixed(prefix, key []byte) []byte {
	if len(prefix) == 0 {
		return key
	}
	return append(append(make([]byte, 0, len(prefix)+len(key)), prefix...), key...)
}
