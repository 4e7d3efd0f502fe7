// Package codec is the byte encoding of surge's stored records: unsigned
// and signed varints, single bytes, and strings prefixed with their length.
// Records put a version byte first and then their fields in a fixed order;
// the ledger's history entries and the store's records share this. The
// messages between a cluster's nodes put an operation byte first and list
// their fields once, for both directions (Fields, EncodeOp, DecodeOp).
package codec

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// ErrCorrupt reports bytes that do not decode as the record they should be.
var ErrCorrupt = errors.New("corrupt record")

// AppendString appends s, prefixed with its length, to dst.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Decoder reads fields from B, the bytes not read yet. The first field
// that does not decode sets Err to ErrCorrupt and empties B; every read
// after that returns a zero value, so a record's fields can be read in a
// row and the error checked once.
type Decoder struct {
	B   []byte
	Err error
}

// Fail marks the record corrupt.
func (d *Decoder) Fail() { d.Err, d.B = ErrCorrupt, nil }

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if len(d.B) == 0 {
		d.Fail()
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// Bool reads a byte AppendBool wrote.
func (d *Decoder) Bool() bool { return d.Byte() == 1 }

// Bytes reads a length-prefixed string without copying it: the result
// shares the decoded bytes.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if d.Err != nil || n > uint64(len(d.B)) || n > math.MaxInt32 {
		d.Fail()
		return nil
	}
	v := d.B[:n]
	d.B = d.B[n:]
	return v
}

// Str reads a length-prefixed string.
func (d *Decoder) Str() string { return string(d.Bytes()) }

// StrAs reads a length-prefixed string; one equal to known is known
// itself, not a copy, so that a reply repeating its request's strings
// allocates none of them.
func (d *Decoder) StrAs(known string) string {
	if b := d.Bytes(); string(b) != known {
		return string(b)
	}
	return known
}

// Done returns Err, or ErrCorrupt if bytes are left over.
func (d *Decoder) Done() error {
	if d.Err == nil && len(d.B) != 0 {
		return ErrCorrupt
	}
	return d.Err
}

// Encoder appends fields to B, in the encoding Decoder reads.
type Encoder struct{ B []byte }

// Uvarint appends v as an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Varint appends v as a signed varint.
func (e *Encoder) Varint(v int64) { e.B = binary.AppendVarint(e.B, v) }

// Byte appends v.
func (e *Encoder) Byte(v byte) { e.B = append(e.B, v) }

// String appends s, length-prefixed (AppendString).
func (e *Encoder) String(s string) { e.B = AppendString(e.B, s) }

// Bool appends v as one byte (AppendBool).
func (e *Encoder) Bool(v bool) { e.B = AppendBool(e.B, v) }

// Time appends t as its nanoseconds since the epoch (a signed varint), the
// zero time as 0, which has none in that range.
func (e *Encoder) Time(t time.Time) {
	if t.IsZero() {
		e.Varint(0)
		return
	}
	e.Varint(t.UnixNano())
}

// Time reads a time Encoder.Time wrote, in UTC; 0 is the zero time.
func (d *Decoder) Time() time.Time {
	n := d.Varint()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
