package store

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/surge-dev/surge/internal/ledger"
)

// errCorrupt reports a record that does not decode.
var errCorrupt = errors.New("store: corrupt record")

// encoder appends fields to a byte slice. Records are a version byte and
// then fields in a fixed order; decoding stops at the first error.
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }
func (e *encoder) string(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}
func (e *encoder) bool(v bool) {
	if v {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

// decoder reads what encoder wrote; err is sticky.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err = errCorrupt; d.b = nil }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool { return d.byte() == 1 }

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) || n > math.MaxInt32 {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// done reports the sticky error, or errCorrupt if bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		return errCorrupt
	}
	return d.err
}

// entry decodes a history entry, without its seq (ledger.ReadEntry).
func (d *decoder) entry() ledger.Entry {
	if d.err != nil {
		return ledger.Entry{}
	}
	e, rest, ok := ledger.ReadEntry(d.b)
	if !ok {
		d.fail()
		return ledger.Entry{}
	}
	d.b = rest
	return e
}
