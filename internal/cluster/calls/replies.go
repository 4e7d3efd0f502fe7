package calls

import (
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A round's replies to one inbox travel packed in one record of the
// replies topic (or a few, kafkalog.PackLimit each), not one record per
// command: the brokers' and the clients' cost is per record. A packed
// record has no key; its entries (kafkalog.AppendEntry) are, in the
// round's order, the request ids and the replies.

// PackReplies returns outs with its replies packed per inbox, after the
// other outputs, in their order. The replies to requests local says are
// the node's own are not packed but returned apart, in held: the node
// hands them to their callers itself once the round committed, and no
// record of the replies topic carries them.
func PackReplies(outs []kafkalog.Output, local func(rid []byte) bool) (res, held []kafkalog.Output) {
	res = make([]kafkalog.Output, 0, len(outs))
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
		if local(o.Key) {
			held = append(held, o)
			continue
		}
		size := kafkalog.EntrySize(o.Key, o.Value)
		i, ok := open[o.Partition]
		if !ok || len(res[i].Value)+size > kafkalog.PackLimit {
			i = len(res)
			open[o.Partition] = i
			res = append(res, kafkalog.Output{Kind: kafkalog.Reply, Partition: o.Partition, Value: make([]byte, 0, min(kafkalog.PackLimit, 64*size))})
		}
		res[i].Value = kafkalog.AppendEntry(res[i].Value, o.Key, o.Value)
	}
	return res, held
}

// UnpackReplies calls fn with each request id and reply of a packed record.
func UnpackReplies(v []byte, fn func(rid, reply []byte)) error {
	return kafkalog.Unpack(v, fn)
}
