package kafkalog

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/surge-dev/surge/internal/codec"
)

// A forward a partition owes is a record of the partition's changelog, a
// change of its forward key (forwardKey: the destination and the
// sequence) to the command owed, carrying the writer's epoch: the replay
// rule counts it as it counts a change, and a zombie's forward record,
// which does not count, is a foreign record the owner repairs. The owner
// writes it once, in the write that owes it, and deletes it (a tombstone)
// in the write that records its destination's acknowledgement. The
// trailers keep only the book's counters.

// forwardPrefix begins a forward record's key. It differs from the epoch
// records' and trailers' after metaPrefix, so the three never share a key.
const forwardPrefix = metaPrefix + "forward/"

// forwardID names an owed forward: its destination and its sequence.
type forwardID struct {
	to  int32
	seq uint64
}

// forwardKey is the key of the record of forward seq owed to partition to.
func forwardKey(to int32, seq uint64) []byte {
	k := strconv.AppendInt([]byte(forwardPrefix), int64(to), 10)
	return strconv.AppendUint(append(k, '/'), seq, 10)
}

// forwardOf reads a forward record's key; false if key is not one.
func forwardOf(key []byte) (forwardID, bool) {
	rest, ok := bytes.CutPrefix(key, []byte(forwardPrefix))
	if !ok {
		return forwardID{}, false
	}
	to, seq, ok := bytes.Cut(rest, []byte("/"))
	p, err1 := strconv.ParseInt(string(to), 10, 32)
	n, err2 := strconv.ParseUint(string(seq), 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return forwardID{}, false
	}
	return forwardID{to: int32(p), seq: n}, true
}

// forwardUpdate is f as a change of its forward record.
func forwardUpdate(f Owed) Update {
	return Update{Key: forwardKey(f.Partition, f.Seq), Value: AppendEntry(nil, f.Key, f.Value)}
}

// forwardUpdates are the changes of forward records that take a
// partition's book from last, as its last write that counted left it, to
// b: a record for each forward owed since, and a tombstone for each
// record of a forward acknowledged since. A forward owed and acknowledged
// between the two writes never had a record.
func (b *Book) forwardUpdates(last *Book) []Update {
	var ups []Update
	for _, to := range slices.Sorted(maps.Keys(b.assigned)) {
		for s := last.acked[to] + 1; s <= min(b.acked[to], last.assigned[to]); s++ {
			ups = append(ups, Update{Key: forwardKey(to, s)})
		}
		for _, f := range b.owed[to] {
			if f.Seq > last.assigned[to] {
				ups = append(ups, forwardUpdate(f))
			}
		}
	}
	return ups
}

// forwardValue is the current value of the record of forward id in b: the
// forward if b owes it, else deleted (nil). An owner writes it again over
// a zombie's record of the same key.
func (b *Book) forwardValue(id forwardID) []byte {
	owed := b.owed[id.to]
	i, ok := slices.BinarySearchFunc(owed, id.seq, func(f Owed, seq uint64) int { return cmp.Compare(f.Seq, seq) })
	if !ok {
		return nil
	}
	return forwardUpdate(owed[i]).Value
}

// owedRecords are the forward records a replay found counting, the last
// of each key: a tombstone removes one.
type owedRecords map[forwardID]Owed

// owedRecordsOf are the forwards b owes, as a replay that found them.
func owedRecordsOf(b *Book) owedRecords {
	r := owedRecords{}
	for _, fs := range b.owed {
		for _, f := range fs {
			r[forwardID{to: f.Partition, seq: f.Seq}] = f
		}
	}
	return r
}

// take records the forward record id, counting, with value (nil: deleted).
func (r owedRecords) take(id forwardID, value []byte) error {
	if value == nil {
		delete(r, id)
		return nil
	}
	d := codec.Decoder{B: value}
	f := Owed{Partition: id.to, Seq: id.seq, Key: d.Bytes(), Value: d.Bytes()}
	if d.Done() != nil {
		return ErrBadRecord
	}
	r[id] = f
	return nil
}

// book is the book of counters c, the last trailer's, owing the forwards
// recorded between each destination's last acknowledged and last assigned
// sequences: a record of a forward acknowledged may outlive its
// acknowledgement until its tombstone counts.
func (r owedRecords) book(c *Book) Book {
	b := c.counters()
	ids := slices.SortedFunc(maps.Keys(r), func(x, y forwardID) int {
		return cmp.Or(cmp.Compare(x.to, y.to), cmp.Compare(x.seq, y.seq))
	})
	for _, id := range ids {
		if id.seq > b.acked[id.to] && id.seq <= b.assigned[id.to] {
			b.keep(r[id])
		}
	}
	return b
}

// withForwards gives each of an Owner's batches the changes of forward
// records its book makes since its partition's last write that counted; a
// batch without a Book keeps that write's.
func (o *Owner) withForwards(batches []Batch) {
	for i, b := range batches {
		last := &o.parts[b.Partition].last.Book
		if b.Book == nil {
			batches[i].Book = last
			continue
		}
		batches[i].Updates = slices.Concat(b.Updates, b.Book.forwardUpdates(last))
	}
}

// restateKey restates key in partition: a forward record from the book of
// the owner's last write that counted, a key of the shard's by restate.
func (o *Owner) restateKey(partition int32, oc *ownedChain, key []byte) ([]Update, error) {
	if id, ok := forwardOf(key); ok {
		return []Update{{Key: key, Value: oc.last.Book.forwardValue(id)}}, nil
	}
	return o.restate(partition, key)
}
