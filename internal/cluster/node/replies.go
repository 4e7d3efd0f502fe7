package node

import (
	"encoding/binary"
	"errors"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A round's replies to one inbox travel packed in one record of the
// replies topic (or a few, packLimit each), not one record per command:
// the brokers' and the clients' cost is per record. A packed record has
// no key; its value is, for each reply in the round's order, the request
// id and the reply's value, each prefixed with its length (uvarint).

// packLimit bounds a packed record's value, well under the brokers'
// default record limit of 1 MiB; a reply larger than it travels alone.
const packLimit = 512 << 10

// packReplies returns outs with its replies packed per inbox, after the
// other outputs, in their order.
func packReplies(outs []kafkalog.Output) []kafkalog.Output {
	res := make([]kafkalog.Output, 0, len(outs))
	open := map[int32]int{} // inbox → its packed record still open in res
	for _, o := range outs {
		if o.Kind != kafkalog.Reply {
			res = append(res, o)
		}
	}
	for _, o := range outs {
		if o.Kind != kafkalog.Reply {
			continue
		}
		size := 2*binary.MaxVarintLen64 + len(o.Key) + len(o.Value)
		i, ok := open[o.Partition]
		if !ok || len(res[i].Value)+size > packLimit {
			i = len(res)
			open[o.Partition] = i
			res = append(res, kafkalog.Output{Kind: kafkalog.Reply, Partition: o.Partition, Value: make([]byte, 0, min(packLimit, 64*size))})
		}
		v := binary.AppendUvarint(res[i].Value, uint64(len(o.Key)))
		v = binary.AppendUvarint(append(v, o.Key...), uint64(len(o.Value)))
		res[i].Value = append(v, o.Value...)
	}
	return res
}

var errBadPack = errors.New("node: malformed packed replies")

// unpackReplies calls fn with each request id and reply of a packed record.
func unpackReplies(v []byte, fn func(rid string, reply []byte)) error {
	for len(v) > 0 {
		rid, rest, err := field(v)
		if err != nil {
			return err
		}
		reply, rest, err := field(rest)
		if err != nil {
			return err
		}
		fn(string(rid), reply)
		v = rest
	}
	return nil
}

// field splits a length-prefixed field off v.
func field(v []byte) ([]byte, []byte, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, errBadPack
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}
