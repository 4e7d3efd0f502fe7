package kafkalog

import (
	"errors"
	"fmt"

	"github.com/surge-dev/surge/internal/codec"
)

// Forwards and their answers travel as commands do, over a peer link or
// through the commands topic: a key and a value addressed to a partition
// (Send). The value's first byte says what it is, beside the workloads'
// bytes (calls.Workload*), which are lower-case letters:
//
//   - a forward (ForwardTag), to its destination: the source partition and
//     the sequence (uvarints), then the command's value; its key is the
//     command's;
//   - answers (AnswerTag), to a source partition: how many, then each one's
//     destination partition (uvarint), kind (one byte) and sequence
//     (uvarint); no key. One value carries every answer a node has for a
//     source at once.
const (
	ForwardTag byte = 'F'
	AnswerTag  byte = 'A'
)

// IsForward reports whether value is a forward or answers (ForwardTag,
// AnswerTag), which travel with no call waiting for them.
func IsForward(value []byte) bool {
	return len(value) > 0 && (value[0] == ForwardTag || value[0] == AnswerTag)
}

// Forwarded is a command a source partition owes a destination, as it
// travels: the receiving owner judges it (Book.Accept) by its source and
// sequence.
type Forwarded struct {
	// From is the source partition, To the destination.
	From, To int32
	// Seq numbers the forward among those From owes To, from 1.
	Seq uint64
	// Key and Value are the command's.
	Key, Value []byte
}

// AnswerKind is what an Answer tells a source.
type AnswerKind uint8

const (
	// Acked: the destination applied every forward of the source up to
	// Seq, in a write that counts. Acknowledgements are cumulative.
	Acked AnswerKind = iota
	// Expected: a forward came early; the destination expects Seq next.
	// It acknowledges nothing.
	Expected
)

// Answer is what a destination tells a source partition about its
// forwards.
type Answer struct {
	// Source is the partition that owes the forwards, Destination the one
	// answering.
	Source, Destination int32
	// Kind says what Seq means.
	Kind AnswerKind
	// Seq is the last sequence applied (Acked) or the next expected
	// (Expected).
	Seq uint64
}

// ErrBadForward reports a forward's or an answer's value that does not
// decode.
var ErrBadForward = errors.New("kafkalog: malformed forward or answer")

// AppendForward appends f's value, as sent to f.To, to dst.
func AppendForward(dst []byte, f Forwarded) []byte {
	e := codec.Encoder{B: append(dst, ForwardTag)}
	e.Uvarint(uint64(uint32(f.From)))
	e.Uvarint(f.Seq)
	return append(e.B, f.Value...)
}

// ReadForward reads a command's key and value, sent to partition to, as a
// forward; false if value is not one (its first byte is not ForwardTag).
// Key and Value alias the arguments.
func ReadForward(to int32, key, value []byte) (Forwarded, bool, error) {
	if len(value) == 0 || value[0] != ForwardTag {
		return Forwarded{}, false, nil
	}
	d := codec.Decoder{B: value[1:]}
	f := Forwarded{From: int32(uint32(d.Uvarint())), To: to, Seq: d.Uvarint(), Key: key}
	if d.Err != nil || f.Seq == 0 {
		return Forwarded{}, true, fmt.Errorf("%w: forward to %d", ErrBadForward, to)
	}
	f.Value = d.B
	return f, true, nil
}

// AppendAnswers appends the value carrying answers, all to one source
// partition, to dst.
func AppendAnswers(dst []byte, answers []Answer) []byte {
	e := codec.Encoder{B: append(dst, AnswerTag)}
	e.Uvarint(uint64(len(answers)))
	for _, a := range answers {
		e.Uvarint(uint64(uint32(a.Destination)))
		e.Byte(byte(a.Kind))
		e.Uvarint(a.Seq)
	}
	return e.B
}

// ReadAnswers reads a value sent to partition source as answers; false if
// it is not (its first byte is not AnswerTag).
func ReadAnswers(source int32, value []byte) ([]Answer, bool, error) {
	if len(value) == 0 || value[0] != AnswerTag {
		return nil, false, nil
	}
	d := codec.Decoder{B: value[1:]}
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Fail()
	}
	var out []Answer
	for ; n > 0 && d.Err == nil; n-- {
		a := Answer{Source: source, Destination: int32(uint32(d.Uvarint())), Kind: AnswerKind(d.Byte()), Seq: d.Uvarint()}
		if a.Kind > Expected {
			d.Fail()
		}
		out = append(out, a)
	}
	if d.Done() != nil {
		return nil, true, fmt.Errorf("%w: answers to %d", ErrBadForward, source)
	}
	return out, true, nil
}
