package kafkalog

import (
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Commands travel packed: one record of the commands topic carries the
// commands a producer had for its partition when it sent (Producer), up
// to PackMax of them, not one record each. The brokers' cost is per
// request, per partition in a request and per record, and a record read
// costs the reading member its decoding; so does a record of the replies
// topic, which nodes pack the same way (calls.PackReplies).
//
// A packed record has no key, the header packedHeader, and as its value,
// for each entry in order, its key and its value, each prefixed with its
// length (uvarint). A record without the header is one command: the flush
// a node appends alone, and a command of a cluster written before packing.

// PackMax bounds the commands of one packed record, so that a round of at
// most max records reads at most max×PackMax commands… of which the member
// asks for max/PackMax records (ChainMember.RoundWait).
const PackMax = 64

// PackLimit bounds a packed record's value, well under the brokers'
// default record limit of 1 MiB; an entry larger than it travels alone.
const PackLimit = 512 << 10

// packedHeader marks a packed record.
const packedHeader = "surge-packed"

// ErrBadPack reports a packed record that does not unpack.
var ErrBadPack = errors.New("kafkalog: malformed packed record")

// AppendEntry appends one entry, key and value, to a packed value.
func AppendEntry(dst, key, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = binary.AppendUvarint(append(dst, key...), uint64(len(value)))
	return append(dst, value...)
}

// EntrySize is the most bytes AppendEntry adds for key and value.
func EntrySize(key, value []byte) int { return 2*binary.MaxVarintLen64 + len(key) + len(value) }

// Unpack calls fn with each entry of a packed value, in order.
func Unpack(v []byte, fn func(key, value []byte)) error {
	for len(v) > 0 {
		key, rest, err := field(v)
		if err != nil {
			return err
		}
		value, rest, err := field(rest)
		if err != nil {
			return err
		}
		fn(key, value)
		v = rest
	}
	return nil
}

// field splits a length-prefixed field off v.
func field(v []byte) ([]byte, []byte, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, ErrBadPack
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

// packer packs entries into records per partition, in their order.
type packer struct {
	topic   string
	records []*kgo.Record
	open    map[int32]*kgo.Record // a partition's record still taking entries
	count   map[*kgo.Record]int
}

func newPacker(topic string) *packer {
	return &packer{topic: topic, open: map[int32]*kgo.Record{}, count: map[*kgo.Record]int{}}
}

// add packs key and value into partition's open record, or a new one if
// it is full; it returns the record that carries them.
func (p *packer) add(partition int32, key, value []byte) *kgo.Record {
	size := EntrySize(key, value)
	r := p.open[partition]
	if r == nil || p.count[r] == PackMax || len(r.Value)+size > PackLimit {
		r = &kgo.Record{
			Topic: p.topic, Partition: partition, Value: make([]byte, 0, min(PackLimit, 16*size)),
			Headers: []kgo.RecordHeader{{Key: packedHeader}},
		}
		p.open[partition] = r
		p.records = append(p.records, r)
	}
	r.Value = AppendEntry(r.Value, key, value)
	p.count[r]++
	return r
}

// unpacked calls fn with each command of record r.
func unpacked(r *kgo.Record, fn func(Command)) error {
	if len(r.Headers) == 0 || r.Headers[0].Key != packedHeader {
		fn(Command{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		return nil
	}
	return Unpack(r.Value, func(k, v []byte) {
		fn(Command{Partition: r.Partition, Offset: r.Offset, Key: k, Value: v})
	})
}
