package codec

import (
	"errors"
	"time"
)

// Fields encodes fields into E, or decodes them from D, whichever is set:
// each method does one or the other, so that one list of a message's
// fields, in one method, serves both its encoding and its decoding.
type Fields struct {
	E *Encoder
	D *Decoder
}

// Str carries a string.
func (f *Fields) Str(s *string) {
	if f.E != nil {
		f.E.String(*s)
		return
	}
	*s = f.D.Str()
}

// Bytes carries a byte string; an empty one decodes as nil.
func (f *Fields) Bytes(b *[]byte) {
	if f.E != nil {
		f.E.String(string(*b))
		return
	}
	*b = nil
	if v := f.D.Bytes(); len(v) > 0 {
		*b = append([]byte(nil), v...)
	}
}

// Bool carries a bool.
func (f *Fields) Bool(v *bool) {
	if f.E != nil {
		f.E.Bool(*v)
		return
	}
	*v = f.D.Bool()
}

// Byte carries a byte.
func (f *Fields) Byte(v *uint8) {
	if f.E != nil {
		f.E.Byte(*v)
		return
	}
	*v = f.D.Byte()
}

// Int64 carries a signed varint.
func (f *Fields) Int64(v *int64) {
	if f.E != nil {
		f.E.Varint(*v)
		return
	}
	*v = f.D.Varint()
}

// Int carries an int as a signed varint. Encoding, it only reads *v, so
// that a value shared with another goroutine may be encoded.
func (f *Fields) Int(v *int) {
	if f.E != nil {
		f.E.Varint(int64(*v))
		return
	}
	*v = int(f.D.Varint())
}

// Uint64 carries an unsigned varint.
func (f *Fields) Uint64(v *uint64) {
	if f.E != nil {
		f.E.Uvarint(*v)
		return
	}
	*v = f.D.Uvarint()
}

// Uint32 carries a uint32 as an unsigned varint; encoding, it only reads
// *v.
func (f *Fields) Uint32(v *uint32) {
	if f.E != nil {
		f.E.Uvarint(uint64(*v))
		return
	}
	*v = uint32(f.D.Uvarint())
}

// Time carries a time (Encoder.Time): the zero time as 0, any other as its
// nanoseconds since the epoch, decoded in UTC.
func (f *Fields) Time(t *time.Time) {
	if f.E != nil {
		f.E.Time(*t)
		return
	}
	*t = f.D.Time()
}

// Present carries whether an optional field follows.
func (f *Fields) Present(there bool) bool {
	f.Bool(&there)
	return there
}

// Count carries a list's length. Decoding, it fails the message for one
// longer than the bytes left, since each item takes one at least, so that
// a hostile length allocates nothing.
func (f *Fields) Count(n int) int {
	f.Int(&n)
	if f.D != nil && (n < 0 || n > len(f.D.B)) {
		f.D.Fail()
		return 0
	}
	return n
}

// List carries *s, its length (Count) and then each element by item.
func List[T any](f *Fields, s *[]T, item func(*T)) {
	n := f.Count(len(*s))
	if f.D != nil {
		*s = nil
		if n > 0 {
			*s = make([]T, n)
		}
	}
	for i := range *s {
		item(&(*s)[i])
	}
}

// ErrUnknownOp reports a message whose operation its reader does not take.
var ErrUnknownOp = errors.New("unknown operation")

// EncodeOp encodes a message: its operation's byte, then the fields carry
// encodes. Its buffer starts with room for a command of a few ids and
// amounts, so that most messages never grow it.
func EncodeOp(op byte, carry func(*Fields)) []byte {
	return AppendOp(make([]byte, 0, 128), op, carry)
}

// encoding is a Fields and the Encoder it encodes into, and decoding one
// and its Decoder: carry's Fields escape to the heap, so each message
// allocates the pair at once rather than one and then the other.
type (
	encoding struct {
		f Fields
		e Encoder
	}
	decoding struct {
		f Fields
		d Decoder
	}
)

// AppendOp appends a message EncodeOp encodes to dst: after a record's
// format byte, say, which the reader checks before DecodeOp.
func AppendOp(dst []byte, op byte, carry func(*Fields)) []byte {
	s := &encoding{e: Encoder{B: dst}}
	s.f.E = &s.e
	s.e.Byte(op)
	carry(&s.f)
	return s.e.B
}

// DecodeOp decodes a message EncodeOp encoded: carry, given its operation,
// decodes the fields, or reports false for an operation it does not take
// (ErrUnknownOp). A message cut short or followed by more is ErrCorrupt.
func DecodeOp(b []byte, carry func(op byte, f *Fields) bool) (byte, error) {
	s := &decoding{d: Decoder{B: b}}
	s.f.D = &s.d
	f := &s.f
	op := f.D.Byte()
	switch {
	case f.D.Err != nil:
		return op, f.D.Err
	case !carry(op, f):
		return op, ErrUnknownOp
	}
	return op, f.D.Done()
}

// DecodeAs decodes a message of operation op, EncodeOp's: carry decodes
// its fields. One of another operation is ErrUnknownOp.
func DecodeAs(b []byte, op byte, carry func(*Fields)) error {
	_, err := DecodeOp(b, func(got byte, f *Fields) bool {
		if got == op {
			carry(f)
		}
		return got == op
	})
	return err
}
