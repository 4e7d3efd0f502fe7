package kafkalog

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Send hands a value to the owner of partition, as a command with key: the
// node sends it over a peer link or appends it to the commands topic. It
// may lose it; the Forwarder sends again what is not answered.
type Send func(partition int32, key, value []byte)

// Forwarder drives the forwards of the partitions a node owns, at least
// once and applied once ("Forwards at least once, applied once",
// docs/CLUSTER.md), over any transport (Send):
//
//   - as a source, it sends a partition's new forwards once the write that
//     owes them counts (Counted), everything owed, in order, when the
//     node takes the partition (Take), what a destination expects again
//     (an Expected answer), and what a destination left unacknowledged
//     for a period (Tick); it keeps the acknowledgements that come, which
//     the partition's next round records in its book (Acknowledged), and
//     stops sending what they cover;
//   - as a destination, it judges each forward a round takes (Judge),
//     answers one that came early with the sequence expected, and once
//     the round's write counts acknowledges, per source, everything
//     applied up to then, and again what came again (Counted).
//
// Its methods may be called from any goroutine; Send is called without
// the Forwarder's lock held.
type Forwarder struct {
	send   Send
	resend time.Duration

	mu    sync.Mutex
	parts map[int32]*forwarding
}

// forwarding is an owned partition's forwards, as a source and as a
// destination.
type forwarding struct {
	book Book // after the partition's last write that counted
	// as a source, per destination
	acked   map[int32]uint64    // the last acknowledgement received
	since   map[int32]time.Time // the last send of what is owed, or progress
	resent  map[int32]uint64    // what an Expected answer had sent again, since
	pending []outgoing          // sends decided under the lock
	// as a destination, per source
	acks     map[int32]uint64 // the last sequence acknowledged
	repeated map[int32]bool   // sent a forward again since the last write
	expected map[int32]uint64 // the sequence answered Expected since the last write
}

// outgoing is a value to send to a partition.
type outgoing struct {
	partition  int32
	key, value []byte
}

// NewForwarder drives forwards through send, sending again what a
// destination leaves unacknowledged for resend.
func NewForwarder(send Send, resend time.Duration) *Forwarder {
	return &Forwarder{send: send, resend: resend, parts: map[int32]*forwarding{}}
}

// Take starts partition's forwards with book, as Owner.Take restored it,
// once Take's first write counted: it sends again, in order, every forward
// the book owes, since the previous owner may have sent none of them, and
// acknowledges to each source what the book applied, since the previous
// owner may have died before it did.
func (f *Forwarder) Take(partition int32, book Book, now time.Time) {
	fw := &forwarding{
		book: book.Clone(), acked: map[int32]uint64{}, since: map[int32]time.Time{}, resent: map[int32]uint64{},
		acks: map[int32]uint64{}, repeated: map[int32]bool{}, expected: map[int32]uint64{},
	}
	f.mu.Lock()
	f.parts[partition] = fw
	for _, to := range slices.Sorted(maps.Keys(book.owed)) {
		fw.sendFrom(partition, to, 0, now)
	}
	fw.acknowledge(partition)
	f.flush(fw)
}

// Drop forgets partition: the node gave it up.
func (f *Forwarder) Drop(partition int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, partition)
}

// Acknowledged records in book, partition's book for its next round, the
// acknowledgements received since its last write that counted: the
// round's write deletes the acknowledged forwards' records.
func (f *Forwarder) Acknowledged(partition int32, book *Book) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fw, ok := f.parts[partition]
	if !ok {
		return nil
	}
	for _, to := range slices.Sorted(maps.Keys(fw.acked)) {
		if err := book.Acknowledge(to, fw.acked[to]); err != nil {
			return err
		}
	}
	return nil
}

// Judge judges forward fwd, taken by a round of its destination with that
// round's book (Book.Accept), and returns the verdict: the round applies
// the forward only if it is ApplyForward. A forward that came early is
// answered at once with the sequence expected, so that its source sends
// again from there; one that came again is acknowledged again once the
// round's write counts.
func (f *Forwarder) Judge(book *Book, fwd Forwarded) Verdict {
	v := book.Accept(fwd.From, fwd.Seq)
	f.mu.Lock()
	fw, ok := f.parts[fwd.To]
	if !ok {
		f.mu.Unlock()
		return v
	}
	switch next := book.Applied(fwd.From) + 1; {
	case v == DuplicateForward:
		fw.repeated[fwd.From] = true
	case v == EarlyForward && fw.expected[fwd.From] != next:
		fw.expected[fwd.From] = next
		fw.answer(fwd.From, Answer{Source: fwd.From, Destination: fwd.To, Kind: Expected, Seq: next})
	}
	f.flush(fw)
	return v
}

// Counted takes partition's write that counted with book: it sends the
// forwards the book owes since the partition's previous write, and
// acknowledges to each source what the book applied, if more than it
// acknowledged already or the source sent a forward again.
func (f *Forwarder) Counted(partition int32, book Book, now time.Time) {
	f.mu.Lock()
	fw, ok := f.parts[partition]
	if !ok {
		f.mu.Unlock()
		return
	}
	last := fw.book
	fw.book = book.Clone()
	for _, to := range slices.Sorted(maps.Keys(book.owed)) {
		if len(last.owed[to]) == 0 || fw.since[to].IsZero() {
			fw.since[to] = now
		}
		for _, o := range book.owed[to] {
			if o.Seq > last.assigned[to] {
				fw.forward(partition, o)
			}
		}
	}
	fw.acknowledge(partition)
	f.flush(fw)
}

// acknowledge queues, to each source of partition, an acknowledgement of
// what the book of its last write that counted applied, if more than
// acknowledged already or the source sent a forward again.
func (fw *forwarding) acknowledge(partition int32) {
	for _, src := range slices.Sorted(maps.Keys(fw.book.applied)) {
		if seq := fw.book.applied[src]; seq > fw.acks[src] || fw.repeated[src] {
			fw.acks[src] = seq
			fw.answer(src, Answer{Source: src, Destination: partition, Kind: Acked, Seq: seq})
		}
	}
	clear(fw.repeated)
	clear(fw.expected)
}

// Answer takes an answer to one of the node's source partitions: an
// acknowledgement stops the sending of what it covers, and is recorded by
// the partition's next round (Acknowledged); an Expected answer has what
// is owed sent again from the sequence it names, once until the next
// acknowledgement or Tick. An answer to a partition the node does not own
// is dropped: its owner sends again what is owed. ErrUnknownForward
// reports an answer naming a sequence the partition never assigned.
func (f *Forwarder) Answer(a Answer, now time.Time) error {
	f.mu.Lock()
	fw, ok := f.parts[a.Source]
	if !ok {
		f.mu.Unlock()
		return nil
	}
	acked, assigned := max(fw.acked[a.Destination], fw.book.acked[a.Destination]), fw.book.assigned[a.Destination]
	switch {
	case a.Kind == Acked && a.Seq > assigned, a.Kind == Expected && a.Seq > assigned+1:
		f.mu.Unlock()
		return fmt.Errorf("%w: partition %d answered %d to %d, %d assigned", ErrUnknownForward, a.Destination, a.Seq, a.Source, assigned)
	case a.Kind == Acked && a.Seq > acked:
		fw.acked[a.Destination], fw.since[a.Destination] = a.Seq, now
		delete(fw.resent, a.Destination)
	case a.Kind == Expected && a.Seq > acked && fw.resent[a.Destination] != a.Seq:
		fw.resent[a.Destination] = a.Seq
		fw.sendFrom(a.Source, a.Destination, a.Seq, now)
	}
	f.flush(fw)
	return nil
}

// Tick sends again, in order, what each owned partition owes a
// destination that acknowledged nothing of it for the resend period.
func (f *Forwarder) Tick(now time.Time) {
	f.mu.Lock()
	var out []outgoing
	for _, p := range slices.Sorted(maps.Keys(f.parts)) {
		fw := f.parts[p]
		for _, to := range slices.Sorted(maps.Keys(fw.book.owed)) {
			if now.Sub(fw.since[to]) >= f.resend {
				delete(fw.resent, to)
				fw.sendFrom(p, to, 0, now)
			}
		}
		out = append(out, fw.pending...)
		fw.pending = nil
	}
	f.mu.Unlock()
	f.deliver(out)
}

// sendFrom queues the forwards owed to partition to, from sequence from
// on, in order, leaving out those acknowledged.
func (fw *forwarding) sendFrom(partition, to int32, from uint64, now time.Time) {
	from = max(from, fw.acked[to]+1)
	for _, o := range fw.book.owed[to] {
		if o.Seq >= from {
			fw.forward(partition, o)
		}
	}
	fw.since[to] = now
}

// forward queues owed forward o of partition.
func (fw *forwarding) forward(partition int32, o Owed) {
	v := AppendForward(nil, Forwarded{From: partition, To: o.Partition, Seq: o.Seq, Value: o.Value})
	fw.pending = append(fw.pending, outgoing{partition: o.Partition, key: o.Key, value: v})
}

// answer queues answer a to source partition src.
func (fw *forwarding) answer(src int32, a Answer) {
	fw.pending = append(fw.pending, outgoing{partition: src, value: AppendAnswers(nil, []Answer{a})})
}

// flush sends what fw queued, under f's lock, which it releases first.
func (f *Forwarder) flush(fw *forwarding) {
	out := fw.pending
	fw.pending = nil
	f.mu.Unlock()
	f.deliver(out)
}

// deliver sends out, in order.
func (f *Forwarder) deliver(out []outgoing) {
	for _, o := range out {
		f.send(o.partition, o.key, o.value)
	}
}
