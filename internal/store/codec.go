package store

import (
	"encoding/binary"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
)

// errCorrupt reports a record that does not decode.
var errCorrupt = codec.ErrCorrupt

// encoder appends fields to a byte slice (internal/codec's encoding).
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }
func (e *encoder) string(s string)  { e.b = codec.AppendString(e.b, s) }
func (e *encoder) bool(v bool)      { e.b = codec.AppendBool(e.b, v) }

// decoder reads what encoder wrote.
type decoder struct{ codec.Decoder }

func newDecoder(b []byte) decoder { return decoder{codec.Decoder{B: b}} }

// entry decodes a history entry, without its seq (ledger.ReadEntry).
func (d *decoder) entry() ledger.Entry {
	e, rest, ok := ledger.ReadEntry(d.B)
	if !ok {
		d.Fail()
		return ledger.Entry{}
	}
	d.B = rest
	return e
}
