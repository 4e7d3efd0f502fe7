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
//   - as a source, the last sequence it assigned per destination and the
//     forwards it owes and no destination acknowledged yet. Each
//     destination numbers its source's forwards 1, 2, 3… so that it can
//     tell the next one from a duplicate or one that came early;
//   - as a receiver, the last sequence it applied per source.
//
// Every trailer restates the whole book, since compaction keeps only each
// epoch's last trailer: a partition's new owner takes it from the last
// trailer that counts (RestoreChain). Like the shard's state, a book runs
// ahead of the log during a round: an owner whose write does not count
// rebuilds it from the log. The zero Book is empty.
type Book struct {
	assigned map[int32]uint64 // per destination, the last sequence assigned
	owed     []Owed           // assigned and not acknowledged, in assignment order
	applied  map[int32]uint64 // per source, the last sequence applied
}

// Verdict is what a receiver does with a forward (Book.Accept).
type Verdict uint8

const (
	// ApplyForward: the forward is the next from its source; apply it.
	ApplyForward Verdict = iota
	// DuplicateForward: the forward was applied already; do not apply it,
	// acknowledge it again (its acknowledgement may have been lost).
	DuplicateForward
	// EarlyForward: an earlier forward of its source is missing; drop it.
	// The source sends again, in order, what it still owes.
	EarlyForward
)

// ErrUnknownForward reports an acknowledgement of a sequence its source
// never assigned: the source's book lost forwards it sent.
var ErrUnknownForward = errors.New("kafkalog: acknowledgement of a forward never owed")

// Owe assigns the next sequence to a command owed to partition to, and
// keeps it owed until to acknowledges it. It returns the forward to send
// once the round's write counts.
func (b *Book) Owe(to int32, key, value []byte) Owed {
	if b.assigned == nil {
		b.assigned = map[int32]uint64{}
	}
	b.assigned[to]++
	f := Owed{Partition: to, Seq: b.assigned[to], Key: key, Value: value}
	b.owed = append(b.owed, f)
	return f
}

// Owed returns the forwards owed and not acknowledged, in the order they
// were assigned: what a partition's new owner sends again.
func (b *Book) Owed() []Owed { return slices.Clone(b.owed) }

// Acknowledge records that partition to applied every forward of this
// partition up to seq: they are owed no longer. An acknowledgement older
// than one already recorded changes nothing.
func (b *Book) Acknowledge(to int32, seq uint64) error {
	if seq > b.assigned[to] {
		return fmt.Errorf("%w: partition %d acknowledged %d, %d assigned", ErrUnknownForward, to, seq, b.assigned[to])
	}
	b.owed = slices.DeleteFunc(b.owed, func(f Owed) bool { return f.Partition == to && f.Seq <= seq })
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
// value shares its maps.
func (b *Book) Clone() Book {
	return Book{assigned: maps.Clone(b.assigned), owed: slices.Clone(b.owed), applied: maps.Clone(b.applied)}
}

// appendBook encodes b into a trailer's value: the owed forwards, then the
// sequences assigned and applied, each in partition order.
func appendBook(e *codec.Encoder, b *Book) {
	e.Uvarint(uint64(len(b.owed)))
	for _, f := range b.owed {
		e.Uvarint(uint64(uint32(f.Partition)))
		e.Uvarint(f.Seq)
		e.B = AppendEntry(e.B, f.Key, f.Value)
	}
	appendSeqs(e, b.assigned)
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

// readBook decodes what appendBook encoded.
func readBook(d *codec.Decoder) Book {
	var b Book
	for n := d.Uvarint(); n > 0 && d.Err == nil; n-- {
		f := Owed{Partition: int32(uint32(d.Uvarint())), Seq: d.Uvarint()}
		f.Key, f.Value = d.Bytes(), d.Bytes()
		b.owed = append(b.owed, f)
	}
	b.assigned = readSeqs(d)
	b.applied = readSeqs(d)
	return b
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
