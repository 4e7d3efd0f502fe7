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
// Their keys and values share one buffer: a round's batches hold hundreds
// of records, each of which would otherwise cost two allocations.
func Changes(out []kafkalog.Output, b *pebble.Batch, partition int32) ([]kafkalog.Output, error) {
	// Every record fits in b's size and a byte of its own (opSet); if not,
	// append moves on to a new array and the records made keep theirs.
	buf := make([]byte, 0, len(b.Repr())+int(b.Count()))
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
			buf, o.Key = part(buf, k)
			start := len(buf)
			buf = append(append(buf, opSet), v...)
			o.Value = buf[start:len(buf):len(buf)]
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete:
			buf, o.Key = part(buf, k)
		case pebble.InternalKeyKindRangeDelete:
			key := binary.AppendUvarint([]byte{rangeMark}, uint64(len(k)))
			o.Key, o.Value = append(append(key, k...), v...), []byte{opRange}
		default:
			return nil, fmt.Errorf("changelog: a round wrote a %s, which the changelog does not carry", kind)
		}
		out = append(out, o)
	}
}

// part appends p to buf and returns buf and the copy of p in it.
func part(buf, p []byte) ([]byte, []byte) {
	start := len(buf)
	buf = append(buf, p...)
	return buf, buf[start:len(buf):len(buf)]
}

// Replay adds the operation of the changelog record key/value to b, on
// the keys the record names preceded by prefix.
func Replay(b *pebble.Batch, prefix, key, value []byte) error {
	switch {
	case len(value) == 0:
		op := b.DeleteDeferred(len(prefix) + len(key))
		prefixed(op.Key, prefix, key)
		return op.Finish()
	case value[0] == opSet:
		op := b.SetDeferred(len(prefix)+len(key), len(value)-1)
		prefixed(op.Key, prefix, key)
		copy(op.Value, value[1:])
		return op.Finish()
	case value[0] == opRange && len(key) > 0 && key[0] == rangeMark:
		start, end, _, err := rangeOf(key)
		if err != nil {
			return err
		}
		op := b.DeleteRangeDeferred(len(prefix)+len(start), len(prefix)+len(end))
		prefixed(op.Key, prefix, start)
		prefixed(op.Value, prefix, end)
		return op.Finish()
	}
	return fmt.Errorf("changelog: changelog record of unknown kind %q", value[0])
}

// rangeOf is the start and end keys of a range delete's key; false for
// the key of a set or a delete.
func rangeOf(key []byte) (start, end []byte, ok bool, err error) {
	if len(key) == 0 || key[0] != rangeMark {
		return nil, nil, false, nil
	}
	n, w := binary.Uvarint(key[1:])
	if w <= 0 || uint64(len(key)-1-w) < n {
		return nil, nil, false, fmt.Errorf("changelog: malformed range delete in the changelog")
	}
	return key[1+w : 1+w+int(n)], key[1+w+int(n):], true, nil
}

// prefixed writes prefix and key into dst, which has their length: a
// deferred operation's key, so that no key is allocated per record.
func prefixed(dst, prefix, key []byte) {
	copy(dst[copy(dst, prefix):], key)
}
