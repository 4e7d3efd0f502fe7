package kafkalog

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// roundBooks are a chain round's books of forwards, one per partition of
// the round ("Forwards at least once, applied once", docs/CLUSTER.md):
// each begins as the partition's last write that counted left it
// (Owner.Book) with the acknowledgements its Forwarder received since
// (Forwarder.Acknowledged), judges the forwards the round takes, owes the
// forwards the round's commands owe, and is written with the partition's
// batch; once that write counts, the Forwarder sends what it owes and
// acknowledges what it applied (Forwarder.Counted). A forward owed outside
// the written book would be lost with a crash before it is sent, and one
// judged in a book not written would be applied again.
type roundBooks struct {
	o      *Owner
	f      *Forwarder
	limits Limits
	now    time.Time
	books  map[int32]*Book
	// err is a book's refusal of an acknowledgement the Forwarder took,
	// which gives the round up.
	err error
}

// newRoundBooks begins a round's books over o and f, refusing the
// commands of a partition that owes a destination past limits.
func newRoundBooks(o *Owner, f *Forwarder, limits Limits, now time.Time) *roundBooks {
	return &roundBooks{o: o, f: f, limits: limits, now: now, books: map[int32]*Book{}}
}

// book is partition p's book in the round. A partition the Owner does not
// own gets an empty one, which is never written: its part of the round is
// not written.
func (r *roundBooks) book(p int32) *Book {
	if b, ok := r.books[p]; ok {
		return b
	}
	b, _ := r.o.Book(p)
	r.acknowledged(p, &b)
	r.books[p] = &b
	return &b
}

// acknowledged records in b, partition p's book, the acknowledgements
// received. The Forwarder checked each against what p assigned when it
// took it (Forwarder.Answer), in the book of p's last write that counted,
// which b runs ahead of: a refusal means the two books parted, and the
// round is given up (err).
func (r *roundBooks) acknowledged(p int32, b *Book) {
	if err := r.f.Acknowledged(p, b); err != nil {
		r.err = errors.Join(r.err, fmt.Errorf("kafkalog: partition %d's acknowledgements: %w", p, err))
	}
}

// judge judges a round's commands in order, and returns those to apply:
// the forwards its books accept (ApplyForward), as the commands they
// carry, and the other commands of partitions that owe no destination
// past the limits. The others' commands are refused. Answers are taken by
// the Forwarder, and the acknowledgements among them recorded at once in
// the book, which the partition's later commands are checked against;
// the malformed forwards and answers, and answers naming a forward never
// owed, are dropped. Forwards and answers are never refused: they drain
// what is owed. The forwards the applied commands owe are not known
// before they are applied, so a round may take a partition past the
// limits by the forwards of its own commands.
func (r *roundBooks) judge(batch []Command) (apply, refused, dropped []Command) {
	apply = batch[:0:0]
	for _, c := range batch {
		book := r.book(c.Partition)
		if fwd, ok, err := ReadForward(c.Partition, c.Key, c.Value); ok {
			switch {
			case err != nil:
				dropped = append(dropped, c)
			case r.f.Judge(book, fwd) == ApplyForward:
				apply = append(apply, Command{Partition: c.Partition, Offset: c.Offset, Key: fwd.Key, Value: fwd.Value})
			}
			continue
		}
		if answers, ok, err := ReadAnswers(c.Partition, c.Value); ok {
			if err != nil || !r.answer(answers) {
				dropped = append(dropped, c)
			}
			r.acknowledged(c.Partition, book)
			continue
		}
		if r.owesTooMuch(book) {
			refused = append(refused, c)
			continue
		}
		apply = append(apply, c)
	}
	return apply, refused, dropped
}

// answer gives answers to the Forwarder; false if one names a forward its
// source never owed (ErrUnknownForward), which is dropped.
func (r *roundBooks) answer(answers []Answer) bool {
	ok := true
	for _, a := range answers {
		if err := r.f.Answer(a, r.now); errors.Is(err, ErrUnknownForward) {
			ok = false
		}
	}
	return ok
}

// owesTooMuch reports that b owes some destination as much as the limits
// allow (Limits.Check).
func (r *roundBooks) owesTooMuch(b *Book) bool {
	for to := range b.owed {
		if r.limits.Check(b, to) != nil {
			return true
		}
	}
	return false
}

// parts groups a round's commands and outputs per partition: each batch
// carries the partition's changes, its book, with the forwards the
// round's commands of the partition owe (Output.From), and a trailer at
// the offset after its last command read, or its last trailer's position
// if the round read none there; its replies are to send once it counts.
func (r *roundBooks) parts(batch []Command, outs []Output) (map[int32]*part, error) {
	parts := map[int32]*part{}
	of := func(p int32) *part {
		if pt, ok := parts[p]; ok {
			return pt
		}
		at, _ := r.o.Commands(p)
		pt := &part{batch: Batch{Partition: p, Commands: at, Book: r.book(p)}}
		parts[p] = pt
		return pt
	}
	for _, c := range batch {
		pt := of(c.Partition)
		if c.Offset >= 0 {
			pt.batch.Commands = max(pt.batch.Commands, c.Offset+1)
		}
	}
	sizeParts(outs, of)
	for _, o := range outs {
		switch o.Kind {
		case Change:
			pt := of(o.Partition)
			pt.batch.Updates = append(pt.batch.Updates, Update{Key: o.Key, Value: o.Value})
		case Reply:
			pt := of(o.From)
			pt.send = append(pt.send, o)
		case Forward:
			of(o.From).batch.Book.Owe(o.Partition, o.Key, o.Value)
		default:
			return nil, fmt.Errorf("kafkalog: output of unknown kind %d", o.Kind)
		}
	}
	return parts, nil
}

// sizeParts gives each part (of) the room its changes and replies among
// outs take, so that a round's appends do not grow them again and again.
func sizeParts(outs []Output, of func(int32) *part) {
	changes, replies := map[int32]int{}, map[int32]int{}
	for _, o := range outs {
		switch o.Kind {
		case Change:
			changes[o.Partition]++
		case Reply:
			replies[o.From]++
		}
	}
	for p, n := range changes {
		pt := of(p)
		pt.batch.Updates = slices.Grow(pt.batch.Updates, n)
	}
	for p, n := range replies {
		pt := of(p)
		pt.send = slices.Grow(pt.send, n)
	}
}

// settle takes what became of partition p's write in the round: if it
// counted, the Forwarder sends what its book owes since and acknowledges
// what it applied; if not, nothing goes out and the Forwarder forgets p.
func (r *roundBooks) settle(p int32, res Result) {
	b, ok := r.books[p]
	switch {
	case res != Counted:
		r.f.Drop(p)
	case ok:
		r.f.Counted(p, *b, r.now)
	}
}
