package ledgerengine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
)

// On the wire a command is its Op byte and its arguments; an outcome, the
// Op byte and the outcome's fields of the command's type. Both are binary
// (internal/codec); each type lists its fields once, in one method that
// encodes or decodes them (wire). A transfer travels as the store keeps
// it (ledgerstore.EncodeTransfer).

// Encode encodes c, a Command, for the owner of its shard's partition:
// the commands a client sends and those a shard forwards (engine.Forward).
func Encode(c engine.Command) ([]byte, error) {
	cmd, ok := c.(Command)
	if !ok {
		return nil, fmt.Errorf("ledgerengine: %T is not a ledger command", c)
	}
	w := &wire{e: &codec.Encoder{B: make([]byte, 0, 64)}}
	w.e.Byte(byte(cmd.Op()))
	cmd.args(w)
	return w.e.B, nil
}

// Decode decodes a command Encode encoded.
func Decode(b []byte) (engine.Command, error) {
	w := &wire{d: &codec.Decoder{B: b}}
	op := Op(w.d.Byte())
	c := newCommand(op)
	if c == nil {
		return nil, fmt.Errorf("ledgerengine: unknown operation %d", op)
	}
	c.args(w)
	if err := w.d.Done(); err != nil {
		return nil, fmt.Errorf("ledgerengine: decoding operation %d: %w", op, err)
	}
	if a, ok := c.(*Atomic); ok && !a.Batch.valid() {
		return nil, fmt.Errorf("ledgerengine: an atomic batch's parts disagree (operation %d)", op)
	}
	return c, nil
}

// Outcome encodes the outcome of an applied command for its sender; nil
// for an atomic batch's step, whose outcome a later round sends (Reply).
func Outcome(cmd engine.Command) []byte {
	c, ok := cmd.(Command)
	if !ok {
		return nil
	}
	if _, ok := c.(*Atomic); ok {
		return nil
	}
	return EncodeOutcome(c)
}

// EncodeOutcome encodes c's outcome, after c's Op byte: never empty.
func EncodeOutcome(c Command) []byte {
	w := &wire{e: &codec.Encoder{B: make([]byte, 0, 64)}}
	w.e.Byte(byte(c.Op()))
	c.outcome(w)
	return w.e.B
}

// DecodeOutcome decodes an outcome EncodeOutcome encoded into c, a command
// of the same operation.
func DecodeOutcome(c Command, b []byte) error {
	w := &wire{d: &codec.Decoder{B: b}}
	if op := Op(w.d.Byte()); op != c.Op() && w.d.Err == nil {
		return fmt.Errorf("ledgerengine: an outcome of operation %d, not %d", op, c.Op())
	}
	c.outcome(w)
	if err := w.d.Done(); err != nil {
		return fmt.Errorf("ledgerengine: decoding the outcome of operation %d: %w", c.Op(), err)
	}
	return nil
}

// wire encodes fields into e, or decodes them from d: each field's method
// does one or the other, so one list of a type's fields serves both.
type wire struct {
	e *codec.Encoder
	d *codec.Decoder
}

func (w *wire) str(s *string) {
	if w.e != nil {
		w.e.String(*s)
		return
	}
	*s = w.d.Str()
}

func (w *wire) bytes(b *[]byte) {
	if w.e != nil {
		w.e.String(string(*b))
		return
	}
	if v := w.d.Bytes(); len(v) > 0 {
		*b = append([]byte(nil), v...)
	}
}

func (w *wire) bool(v *bool) {
	if w.e != nil {
		w.e.Bool(*v)
		return
	}
	*v = w.d.Bool()
}

func (w *wire) int64(v *int64) {
	if w.e != nil {
		w.e.Varint(*v)
		return
	}
	*v = w.d.Varint()
}

func (w *wire) int(v *int) {
	n := int64(*v)
	w.int64(&n)
	*v = int(n)
}

func (w *wire) uint64(v *uint64) {
	if w.e != nil {
		w.e.Uvarint(*v)
		return
	}
	*v = w.d.Uvarint()
}

func (w *wire) time(t *time.Time) {
	if w.e != nil {
		w.e.Time(*t)
		return
	}
	*t = w.d.Time()
}

func (w *wire) duration(v *time.Duration) {
	n := int64(*v)
	w.int64(&n)
	*v = time.Duration(n)
}

// count carries a list's length; decoding, it refuses one longer than the
// bytes left, since every item takes one at least.
func (w *wire) count(n int) int {
	w.int(&n)
	if w.d != nil && (n < 0 || n > len(w.d.B)) {
		w.d.Fail()
		return 0
	}
	return n
}

// present carries whether an optional field is there.
func (w *wire) present(there bool) bool {
	w.bool(&there)
	return there
}

// list carries *s, calling item on each element.
func list[T any](w *wire, s *[]T, item func(*T)) {
	n := w.count(len(*s))
	if w.d != nil {
		*s = nil
		if n > 0 {
			*s = make([]T, n)
		}
	}
	for i := range *s {
		item(&(*s)[i])
	}
}

// strMap carries a map in its keys' order.
func (w *wire) strMap(m *map[string]string) {
	if w.e != nil {
		w.count(len(*m))
		for _, k := range slices.Sorted(maps.Keys(*m)) {
			w.e.String(k)
			w.e.String((*m)[k])
		}
		return
	}
	n := w.count(0)
	if n == 0 {
		*m = nil
		return
	}
	*m = make(map[string]string, n)
	for range n {
		k := w.d.Str()
		(*m)[k] = w.d.Str()
	}
}

func (w *wire) sums(m *map[string]int64) {
	if w.e != nil {
		w.count(len(*m))
		for _, k := range slices.Sorted(maps.Keys(*m)) {
			w.e.String(k)
			w.e.Varint((*m)[k])
		}
		return
	}
	n := w.count(0)
	*m = make(map[string]int64, n)
	for range n {
		k := w.d.Str()
		(*m)[k] = w.d.Varint()
	}
}

// err carries an error as the client hears it: none, a domain error (a
// *ledger.Error) or a server fault, which decodes as its message.
func (w *wire) err(err *error) {
	const (
		none byte = iota
		domain
		fault
	)
	if w.e != nil {
		switch e := domainErr(*err); {
		case *err == nil:
			w.e.Byte(none)
		case e != nil:
			w.e.Byte(domain)
			w.e.String(string(e.Code))
			w.e.String(e.Detail)
		default:
			w.e.Byte(fault)
			w.e.String((*err).Error())
		}
		return
	}
	switch w.d.Byte() {
	case none:
		*err = nil
	case domain:
		*err = &ledger.Error{Code: ledger.Code(w.d.Str()), Detail: w.d.Str()}
	case fault:
		*err = errors.New(w.d.Str())
	default:
		w.d.Fail()
	}
}

// domainError carries an optional *ledger.Error.
func (w *wire) domainError(e **ledger.Error) {
	if !w.present(*e != nil) {
		*e = nil
		return
	}
	if w.d != nil {
		*e = &ledger.Error{}
	}
	w.str((*string)(&(*e).Code))
	w.str(&(*e).Detail)
}

func (w *wire) spec(s *ledger.AccountSpec) {
	w.str(&s.ID)
	w.str(&s.Currency)
	w.int64(&s.OverdraftLimit)
	w.strMap(&s.Metadata)
}

// account carries what a client sees of an account: not its journal's
// recent entries, which only its shard keeps.
func (w *wire) account(a *ledger.Account) {
	w.str(&a.ID)
	w.str(&a.Currency)
	w.int64(&a.OverdraftLimit)
	w.strMap(&a.Metadata)
	w.time(&a.CreatedAt)
	w.int64(&a.Balance)
	w.int64(&a.Pending)
	w.uint64(&a.Entries)
}

// request carries a transfer request in the order the transfer's binary
// command always had.
func (w *wire) request(r *ledger.TransferRequest) {
	w.str(&r.ID)
	w.str(&r.From)
	w.str(&r.To)
	w.int64(&r.Amount)
	w.str(&r.Currency)
	w.str(&r.Memo)
	w.bool(&r.Pending)
	w.duration(&r.Timeout)
}

func (w *wire) requests(rs *[]ledger.TransferRequest) { list(w, rs, w.request) }

// transfer carries a transfer as the store keeps it, after its id.
func (w *wire) transfer(t *ledger.Transfer) {
	if w.e != nil {
		w.e.String(t.ID)
		ledgerstore.EncodeTransfer(w.e, t)
		return
	}
	id := w.d.Str()
	*t = ledgerstore.DecodeTransfer(w.d, id)
}

func (w *wire) batchResults(rs *[]ledger.BatchResult) {
	list(w, rs, func(r *ledger.BatchResult) {
		w.transfer(&r.Transfer)
		w.bool(&r.Replayed)
		w.err(&r.Err)
	})
}

func (w *wire) results(rs *[]WireResult) {
	list(w, rs, func(r *WireResult) {
		w.transfer(&r.Transfer)
		w.bool(&r.Replayed)
		w.domainError(&r.Err)
	})
}

func (w *wire) credit(leg *ledger.CreditLeg) {
	w.str(&leg.TransferID)
	w.str(&leg.From)
	w.str(&leg.To)
	w.int64(&leg.Amount)
	w.str(&leg.Memo)
	w.time(&leg.At)
}

func (w *wire) query(q *ledger.HistoryQuery) {
	w.int(&q.Limit)
	w.uint64(&q.Cursor)
	w.uint64(&q.Offset)
}

func (w *wire) page(p *ledger.HistoryPage) {
	list(w, &p.Entries, func(e *ledger.Entry) {
		w.uint64(&e.Seq)
		w.str(&e.TransferID)
		dir := uint64(e.Direction)
		w.uint64(&dir)
		e.Direction = ledger.Direction(dir)
		w.int64(&e.Amount)
		w.int64(&e.BalanceAfter)
		w.str(&e.Counterpart)
		w.str(&e.Memo)
		w.time(&e.At)
	})
	w.uint64(&p.NextCursor)
}

func (w *wire) stats(s *ShardStats) {
	w.int64(&s.Accounts)
	w.sums(&s.Balances)
	w.sums(&s.Credits.Sent)
	w.sums(&s.Credits.Received)
}

func (w *wire) ints(s *[]int) { list(w, s, w.int) }

func (w *wire) atomicBatch(b *AtomicBatch) {
	w.str(&b.ID)
	w.int(&b.Attempt)
	w.requests(&b.Reqs)
	w.strMap(&b.Currencies)
	w.ints(&b.Chain)
	w.int(&b.Step)
	w.bytes(&b.ReplyTo)
	w.bool(&b.EvalOnly)
	w.results(&b.Results)
	list(w, &b.Nows, w.time)
	w.int(&b.Failed)
	w.domainError(&b.Err)
	w.ints(&b.Reserved)
	w.ints(&b.Skip)
}
