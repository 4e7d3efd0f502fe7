package kafkalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/surge-dev/surge/internal/codec"
)

// Book is one partition's bookkeeping of forwards ("Rounds without a
// transaction", docs/CLUSTER.md), as a source and as a receiver:
//
//   - as a source, per destination the last sequence it assigned and the
//     last one the destination acknowledged, and the forwards owed
//     between the two. Each destination numbers its source's forwards
//     1, 2, 3… so that it can tell the next one from a duplicate or one
//     that came early;
//   - as a receiver, the last sequence it applied per source.
//
// The counters travel in every trailer, since compaction keeps only each
// epoch's last trailer; each owed forward is a changelog record of its own
// (forwardrecords.go), written once in the write that owed it and deleted in
// the write that records its acknowledgement, so that a trailer stays the
// same size whatever is owed. A partition's new owner takes the counters
// from the last trailer that counts and the forwards owed from the forward
// records that count (RestoreChain). Like the shard's state, a book runs
// ahead of the log during a round: an owner whose write does not count
// rebuilds it from the log. The zero Book is empty.
type Book struct {
	assigned  map[int32]uint64 // per destination, the last sequence assigned
	acked     map[int32]uint64 // per destination, the last sequence acknowledged
	owed      map[int32][]Owed // per destination, the sequences between, in order
	owedBytes map[int32]int    // per destination, the owed forwards' keys and values
	applied   map[int32]uint64 // per source, the last sequence applied
}

// Verdict is what a receiver does with a forward (Book.Accept).
type Verdict uint8

const (
	// ApplyForward: the forward is the next from its source; apply it.
	ApplyForward Verdict = iota
	// DuplicateForward: the forward was applied already; do not apply it,
	// acknowledge it again (its acknowledgement may have been lost).
	DuplicateForward
	// EarlyForward: an earlier forward of its source is missing; drop it,
	// and tell the source the sequence expected, from which it sends again
	// what it still owes.
	EarlyForward
)

var (
	// ErrUnknownForward reports an acknowledgement of a sequence its
	// source never assigned: the source's book lost forwards it sent.
	ErrUnknownForward = errors.New("kafkalog: acknowledgement of a forward never owed")
	// ErrOwesTooMuch refuses work that would owe a destination more while
	// the partition owes it as many forwards or bytes as Limits allow: the
	// destination is not acknowledging, and what a source owes stays
	// bounded. The node answers the request as unavailable (503).
	ErrOwesTooMuch = errors.New("kafkalog: partition owes its destination too many forwards")
)

// Owe assigns the next sequence to a command owed to partition to, and
// keeps it owed until to acknowledges it. It returns the forward to send
// once the round's write counts.
func (b *Book) Owe(to int32, key, value []byte) Owed {
	if b.assigned == nil {
		b.assigned = map[int32]uint64{}
	}
	b.assigned[to]++
	f := Owed{Partition: to, Seq: b.assigned[to], Key: key, Value: value}
	b.keep(f)
	return f
}

// keep adds f, owed and not acknowledged, after the forwards owed to its
// destination.
func (b *Book) keep(f Owed) {
	if b.owed == nil {
		b.owed = map[int32][]Owed{}
	}
	if b.owedBytes == nil {
		b.owedBytes = map[int32]int{}
	}
	b.owed[f.Partition] = append(b.owed[f.Partition], f)
	b.owedBytes[f.Partition] += len(f.Key) + len(f.Value)
}

// Owed returns the forwards owed and not acknowledged, by destination in
// partition order, each destination's in sequence order: what a
// partition's new owner sends again.
func (b *Book) Owed() []Owed {
	var out []Owed
	for _, to := range slices.Sorted(maps.Keys(b.owed)) {
		out = append(out, b.owed[to]...)
	}
	return out
}

// Acknowledged is the last sequence partition to acknowledged (0: none).
func (b *Book) Acknowledged(to int32) uint64 { return b.acked[to] }

// Acknowledge records that partition to applied every forward of this
// partition up to seq: they are owed no longer. An acknowledgement older
// than one already recorded changes nothing.
func (b *Book) Acknowledge(to int32, seq uint64) error {
	if seq > b.assigned[to] {
		return fmt.Errorf("%w: partition %d acknowledged %d, %d assigned", ErrUnknownForward, to, seq, b.assigned[to])
	}
	if seq <= b.acked[to] {
		return nil
	}
	if b.acked == nil {
		b.acked = map[int32]uint64{}
	}
	b.acked[to] = seq
	owed := b.owed[to]
	n := 0
	for n < len(owed) && owed[n].Seq <= seq {
		b.owedBytes[to] -= len(owed[n].Key) + len(owed[n].Value)
		n++
	}
	if n == len(owed) {
		delete(b.owed, to)
		delete(b.owedBytes, to)
		return nil
	}
	b.owed[to] = owed[n:]
	return nil
}

// Accept judges forward seq from partition from, and records it applied if
// it is the next one (ApplyForward): the round applies it, and its trailer
// records the new sequence with the forward's effects.
func (b *Book) Accept(from int32, seq uint64) Verdict {
	switch last := b.applied[from]; {
	case seq <= last:
		return DuplicateForward
	case seq > last+1:
		return EarlyForward
	}
	if b.applied == nil {
		b.applied = map[int32]uint64{}
	}
	b.applied[from] = seq
	return ApplyForward
}

// Applied is the last sequence applied from partition from (0: none): what
// the receiver acknowledges once the write that recorded it counts.
func (b *Book) Applied(from int32) uint64 { return b.applied[from] }

// Clone returns a copy of b that changes apart from it: a Book copied by
// value shares its maps. The copy shares the arrays of b's owed forwards,
// each slice capped at its length: a Book writes no owed forward in place
// (keep appends, Acknowledge reslices), so the copy's first Owe to a
// destination copies its forwards into an array of its own, and b's
// appends go past the copy's length. A round's book is copied for the
// owner, the Forwarder and the local copy's state, and most of those
// copies never owe anything.
func (b *Book) Clone() Book {
	c := b.counters()
	c.owed, c.owedBytes = make(map[int32][]Owed, len(b.owed)), maps.Clone(b.owedBytes)
	for to, fs := range b.owed {
		c.owed[to] = slices.Clip(fs)
	}
	return c
}

// counters is a copy of b's counters, owing nothing.
func (b *Book) counters() Book {
	return Book{assigned: maps.Clone(b.assigned), acked: maps.Clone(b.acked), applied: maps.Clone(b.applied)}
}

// Limits bound what a source partition owes one destination
// (ErrOwesTooMuch). Zero fields take the defaults.
type Limits struct {
	// Forwards is the most forwards owed to one destination (default
	// DefaultMaxOwed).
	Forwards int
	// Bytes is the most bytes of owed forwards' keys and values to one
	// destination (default DefaultMaxOwedBytes). A forward taken under the
	// bound may pass it by its own size.
	Bytes int
}

// The default Limits: a source owes a destination at most as many
// forwards as a round reads commands, and as many bytes as a record
// holds, so that what it sends again to one destination is a round's
// worth.
const (
	DefaultMaxOwed      = 4096
	DefaultMaxOwedBytes = MaxRecordBytes
)

// Check refuses (ErrOwesTooMuch) work that would owe partition to more
// forwards while b owes it as many as l allows.
func (l Limits) Check(b *Book, to int32) error {
	maxFwd, maxBytes := l.Forwards, l.Bytes
	if maxFwd <= 0 {
		maxFwd = DefaultMaxOwed
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOwedBytes
	}
	if n, size := len(b.owed[to]), b.owedBytes[to]; n >= maxFwd || size >= maxBytes {
		return fmt.Errorf("%w: %d forwards, %d bytes owed to partition %d", ErrOwesTooMuch, n, size, to)
	}
	return nil
}

// appendCounters encodes b's counters into a trailer's value: the
// sequences assigned, acknowledged and applied, each in partition order.
// The forwards owed are records of their own.
func appendCounters(e *codec.Encoder, b *Book) {
	appendSeqs(e, b.assigned)
	appendSeqs(e, b.acked)
	appendSeqs(e, b.applied)
}

// appendSeqs encodes sequences per partition, in partition order.
func appendSeqs(e *codec.Encoder, seqs map[int32]uint64) {
	e.Uvarint(uint64(len(seqs)))
	for _, p := range slices.Sorted(maps.Keys(seqs)) {
		e.Uvarint(uint64(uint32(p)))
		e.Uvarint(seqs[p])
	}
}

// readCounters decodes what appendCounters encoded: a Book owing nothing.
func readCounters(d *codec.Decoder) Book {
	return Book{assigned: readSeqs(d), acked: readSeqs(d), applied: readSeqs(d)}
}

// readSeqs decodes what appendSeqs encoded.
func readSeqs(d *codec.Decoder) map[int32]uint64 {
	n := d.Uvarint()
	if n == 0 || d.Err != nil {
		return nil
	}
	seqs := map[int32]uint64{}
	for ; n > 0 && d.Err == nil; n-- {
		p := int32(uint32(d.Uvarint()))
		seqs[p] = d.Uvarint()
	}
	return seqs
}
