package kafkalog

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/codec"
)

// A round that is not a Kafka transaction ("Rounds without a
// transaction", docs/CLUSTER.md) writes each partition's part of it as one
// record batch to the partition's changelog: its changes, then a trailer.
// A partition's owner first appends an epoch record. Three kinds of
// records thus share a changelog partition, told apart by their first
// header:
//
//   - an epoch record (epochHeader): an owner's claim on the partition.
//     Its offset is the owner's Epoch. Its key is unique, so that
//     compaction never removes one: the replay rule needs every epoch
//     record that follows a change it keeps.
//   - a change (changeHeader, valued by the writer's Epoch, uvarint): a
//     key of the shard's state and its new value, as a transactional round
//     of a cluster being upgraded wrote it, plus the epoch the replay rule
//     judges it by (Chain). A transactional round's change has no header
//     at all. A forward the partition owes is a change too, of a key of
//     its own (forwardKey), so that the replay rule, a writer's reading of
//     foreign records and the repairs treat it as they treat the shard's
//     keys.
//   - a trailer (trailerHeader): the last record of a round's batch
//     (Trailer). Its key is per epoch: compaction keeps the last trailer
//     of each epoch, and a zombie's late trailer replaces only its own
//     epoch's.

// Epoch is an owner's term over one changelog partition: the offset of the
// epoch record it appended. Two owners never share one, even one node
// claiming a partition twice.
type Epoch int64

// NoEpoch is the epoch in force before a partition's first epoch record.
const NoEpoch Epoch = -1

// The headers that say a changelog record's kind.
const (
	epochHeader   = "surge-epoch"
	changeHeader  = "surge-change"
	trailerHeader = "surge-trailer"
)

// metaPrefix begins the keys of epoch records, trailers and forward
// records, each kind then naming itself. No storage key
// begins with 0xff, and a range delete's key (changelog package) goes on
// with a valid uvarint, which ten more 0xff bytes are not: compaction never
// merges these records with a change.
const metaPrefix = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"

// ErrBadRecord reports a changelog record that is none of the three kinds,
// or whose epoch or trailer does not decode.
var ErrBadRecord = errors.New("kafkalog: malformed changelog record")

// Claim is what an epoch record says of the owner that appended it.
type Claim struct {
	// Generation is the consumer group's generation the owner was
	// assigned the partition in.
	Generation int32
	// Era is the incarnation of the group Generation belongs to (Term).
	Era uint32
	// Member is the owner's member id in the group.
	Member string
	// Nonce makes the record's key unique (epochKey).
	Nonce uint64
	// Restated, if set, is the partition's last trailer as the owner
	// restored it before claiming: an epoch record is never compacted, so
	// what it restates outlives a zombie's late trailer, which compaction
	// lets replace the last one its epoch wrote while in force.
	Restated *Restated
}

// Restated is the state of a partition's replay an epoch record carries.
// It counts only if the record landed at At, the offset the owner's
// restore read up to: nothing that counts can lie between. Offsets are
// the same in the log compacted or not, so both replays agree.
type Restated struct {
	// At is the offset the owner restored the partition up to.
	At int64
	// Last is the last trailer that counted below At; the record holds
	// its book's counters, the forwards owed being records of their own
	// that count before At.
	Last Trailer
}

// Term is the claim's place in the order of claims (Chain).
func (c Claim) Term() Term { return Term{Era: c.Era, Generation: c.Generation} }

// restated is what c's epoch record, at offset, restates: nil unless it
// landed where its owner's restore ended.
func (c Claim) restated(offset int64) *Trailer {
	if c.Restated == nil || c.Restated.At != offset {
		return nil
	}
	t := c.Restated.Last
	t.Epoch, t.Book = Epoch(offset), t.Book.counters()
	return &t
}

// Owed is a command a round owes another partition (a Forward output),
// kept as a record of its source's changelog until the destination
// acknowledges it (Book, forwardKey).
type Owed struct {
	// Partition is the partition the command is owed to.
	Partition int32
	// Seq numbers the command among those its source partition owes
	// Partition, from 1.
	Seq uint64
	// Key and Value are the command's, as it is appended to the commands
	// topic.
	Key, Value []byte
}

// Trailer closes a partition's batch of a round.
type Trailer struct {
	// Epoch is the writer's epoch.
	Epoch Epoch
	// Commands is the offset of the commands topic the partition's owners
	// consumed up to (the next one to read), -1 if none ever did. Every
	// trailer restates it, whether its round read commands or not: the
	// trailer that said it last may be compacted away.
	Commands int64
	// Book is the partition's bookkeeping of forwards after the round. A
	// trailer's record holds its counters, restated for the same reason;
	// the forwards owed are records of their own, which a restore adds
	// (ChainState.Last).
	Book Book
}

// Entry is a changelog record read as one of the three kinds.
type Entry struct {
	// Kind says which of the three kinds the record is.
	Kind EntryKind
	// Offset is the record's offset in its partition.
	Offset int64
	// Epoch is an epoch record's own epoch (its offset), a change's or a
	// trailer's writer's.
	Epoch Epoch
	// Key and Value are a change's.
	Key, Value []byte
	// Claim is an epoch record's.
	Claim Claim
	// Trailer is a trailer's.
	Trailer Trailer
}

// EntryKind is the kind of a changelog record.
type EntryKind uint8

// The kinds of changelog records.
const (
	// KindChange is a change of a key of the shard's state.
	KindChange EntryKind = iota
	// KindEpoch is an owner's claim on the partition.
	KindEpoch
	// KindTrailer closes a round's batch.
	KindTrailer
)

// epochKey is an epoch record's key: unique per claim.
func epochKey(c Claim) []byte {
	return strconv.AppendUint([]byte(metaPrefix+"epoch/"), c.Nonce, 16)
}

// trailerKey is a trailer's key: one per epoch.
func trailerKey(e Epoch) []byte {
	return strconv.AppendInt([]byte(metaPrefix+"trailer/"), int64(e), 10)
}

// EpochRecord is the record that claims partition for the owner c.
func EpochRecord(topic string, partition int32, c Claim) *kgo.Record {
	e := codec.Encoder{}
	e.Uvarint(uint64(uint32(c.Generation)))
	e.Uvarint(uint64(c.Era))
	e.Uvarint(c.Nonce)
	e.String(c.Member)
	if c.Restated == nil {
		e.Varint(-1)
	} else {
		e.Varint(c.Restated.At)
		e.Varint(c.Restated.Last.Commands)
		appendCounters(&e, &c.Restated.Last.Book)
	}
	return &kgo.Record{
		Topic: topic, Partition: partition, Key: epochKey(c), Value: e.B,
		Headers: []kgo.RecordHeader{{Key: epochHeader}},
	}
}

// ChangeRecord is a change of key to value (nil: deleted) by the owner of
// epoch e.
func ChangeRecord(topic string, partition int32, e Epoch, key, value []byte) *kgo.Record {
	return &kgo.Record{
		Topic: topic, Partition: partition, Key: key, Value: value,
		Headers: []kgo.RecordHeader{{Key: changeHeader, Value: binary.AppendUvarint(nil, uint64(e))}},
	}
}

// TrailerRecord is the record that closes a round's batch to partition: t
// with its book's counters, not the forwards it owes.
func TrailerRecord(topic string, partition int32, t Trailer) *kgo.Record {
	e := codec.Encoder{}
	e.Uvarint(uint64(t.Epoch))
	e.Varint(t.Commands)
	appendCounters(&e, &t.Book)
	return &kgo.Record{
		Topic: topic, Partition: partition, Key: trailerKey(t.Epoch), Value: e.B,
		Headers: []kgo.RecordHeader{{Key: trailerHeader}},
	}
}

// ReadEntry reads changelog record r as an Entry. A record without headers
// is a change a transactional round wrote: its epoch is NoEpoch, so it
// counts before the partition's first epoch record and not after.
func ReadEntry(r *kgo.Record) (Entry, error) {
	e := Entry{Offset: r.Offset}
	if len(r.Headers) == 0 {
		e.Kind, e.Epoch, e.Key, e.Value = KindChange, NoEpoch, r.Key, r.Value
		return e, nil
	}
	var err error
	switch h := r.Headers[0]; h.Key {
	case changeHeader:
		e.Kind, e.Key, e.Value = KindChange, r.Key, r.Value
		e.Epoch, err = readEpoch(h.Value)
	case epochHeader:
		e.Kind, e.Epoch = KindEpoch, Epoch(r.Offset)
		e.Claim, err = readClaim(r.Value)
	case trailerHeader:
		e.Kind = KindTrailer
		e.Trailer, err = readTrailer(r.Value)
		e.Epoch = e.Trailer.Epoch
	default:
		err = ErrBadRecord
	}
	return e, err
}

// readEpoch reads a change's epoch header.
func readEpoch(v []byte) (Epoch, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || w != len(v) {
		return 0, ErrBadRecord
	}
	return Epoch(n), nil
}

// readClaim reads an epoch record's value.
func readClaim(v []byte) (Claim, error) {
	d := codec.Decoder{B: v}
	c := Claim{Generation: int32(uint32(d.Uvarint())), Era: uint32(d.Uvarint()), Nonce: d.Uvarint(), Member: d.Str()}
	if at := d.Varint(); at >= 0 && d.Err == nil {
		c.Restated = &Restated{At: at, Last: Trailer{Commands: d.Varint()}}
		c.Restated.Last.Book = readCounters(&d)
	}
	if d.Done() != nil {
		return Claim{}, ErrBadRecord
	}
	return c, nil
}

// readTrailer reads a trailer's value.
func readTrailer(v []byte) (Trailer, error) {
	d := codec.Decoder{B: v}
	t := Trailer{Epoch: Epoch(d.Uvarint()), Commands: d.Varint()}
	t.Book = readCounters(&d)
	if d.Done() != nil {
		return Trailer{}, ErrBadRecord
	}
	return t, nil
}
