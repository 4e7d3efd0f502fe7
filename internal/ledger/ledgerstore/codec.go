package ledgerstore

import (
	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
)

// decoder reads what codec.Encoder wrote, and history entries.
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
