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
	return codec.EncodeOp(byte(cmd.Op()), func(f *codec.Fields) { cmd.args(wire{f}) }), nil
}

// AppendEncode appends c, a Command, encoded as Encode encodes it, to dst:
// after the workload's byte a cluster's calls put first.
func AppendEncode(dst []byte, c Command) []byte {
	return codec.AppendOp(dst, byte(c.Op()), func(f *codec.Fields) { c.args(wire{f}) })
}

// Decode decodes a command Encode encoded.
func Decode(b []byte) (engine.Command, error) {
	var c Command
	op, err := codec.DecodeOp(b, func(op byte, f *codec.Fields) bool {
		if c = newCommand(Op(op)); c != nil {
			c.args(wire{f})
		}
		return c != nil
	})
	if err != nil {
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
	return codec.EncodeOp(byte(c.Op()), func(f *codec.Fields) { c.outcome(wire{f}) })
}

// DecodeOutcome decodes an outcome EncodeOutcome encoded into c, a command
// of the same operation.
func DecodeOutcome(c Command, b []byte) error {
	if err := codec.DecodeAs(b, byte(c.Op()), func(f *codec.Fields) { c.outcome(wire{f}) }); err != nil {
		return fmt.Errorf("ledgerengine: decoding an outcome of operation %d: %w", c.Op(), err)
	}
	return nil
}

// wire encodes fields into E, or decodes them from D (codec.Fields), with
// the ledger's own fields beside codec's. It is passed by value, a pointer
// wide, so that handing it to a command's methods allocates nothing.
type wire struct{ *codec.Fields }

func (w wire) duration(v *time.Duration) {
	n := int64(*v)
	w.Int64(&n)
	*v = time.Duration(n)
}

// mapOf carries a map with string keys, in its keys' order, calling value
// on each value; an empty one decodes as nil.
func mapOf[V any](w wire, m *map[string]V, value func(*V)) {
	if w.E != nil {
		w.Count(len(*m))
		for _, k := range slices.Sorted(maps.Keys(*m)) {
			v := (*m)[k]
			w.Str(&k)
			value(&v)
		}
		return
	}
	*m = nil
	for n := w.Count(0); n > 0; n-- {
		var k string
		var v V
		w.Str(&k)
		value(&v)
		if *m == nil {
			*m = map[string]V{}
		}
		(*m)[k] = v
	}
}

func (w wire) strMap(m *map[string]string) { mapOf(w, m, w.Str) }
func (w wire) sums(m *map[string]int64)    { mapOf(w, m, w.Int64) }

// err carries an error as the client hears it: none, a domain error (a
// *ledger.Error) or a server fault, which decodes as its message.
func (w wire) err(err *error) {
	const (
		none byte = iota
		domain
		fault
	)
	if w.E != nil {
		switch e := domainErr(*err); {
		case *err == nil:
			w.E.Byte(none)
		case e != nil:
			w.E.Byte(domain)
			w.E.String(string(e.Code))
			w.E.String(e.Detail)
		default:
			w.E.Byte(fault)
			w.E.String((*err).Error())
		}
		return
	}
	switch w.D.Byte() {
	case none:
		*err = nil
	case domain:
		*err = &ledger.Error{Code: ledger.Code(w.D.Str()), Detail: w.D.Str()}
	case fault:
		*err = errors.New(w.D.Str())
	default:
		w.D.Fail()
	}
}

// domainError carries an optional *ledger.Error.
func (w wire) domainError(e **ledger.Error) {
	if !w.Present(*e != nil) {
		*e = nil
		return
	}
	if w.D != nil {
		*e = &ledger.Error{}
	}
	w.Str((*string)(&(*e).Code))
	w.Str(&(*e).Detail)
}

func (w wire) spec(s *ledger.AccountSpec) {
	w.Str(&s.ID)
	w.Str(&s.Currency)
	w.Int64(&s.OverdraftLimit)
	w.strMap(&s.Metadata)
}

// account carries what a client sees of an account: not its journal's
// recent entries, which only its shard keeps.
func (w wire) account(a *ledger.Account) {
	w.Str(&a.ID)
	w.Str(&a.Currency)
	w.Int64(&a.OverdraftLimit)
	w.strMap(&a.Metadata)
	w.Time(&a.CreatedAt)
	w.Int64(&a.Balance)
	w.Int64(&a.Pending)
	w.Uint64(&a.Entries)
}

// request carries a transfer request in the order the transfer's binary
// command always had.
func (w wire) request(r *ledger.TransferRequest) {
	w.Str(&r.ID)
	w.Str(&r.From)
	w.Str(&r.To)
	w.Int64(&r.Amount)
	w.Str(&r.Currency)
	w.Str(&r.Memo)
	w.Bool(&r.Pending)
	w.duration(&r.Timeout)
}

func (w wire) requests(rs *[]ledger.TransferRequest) { codec.List(w.Fields, rs, w.request) }

// transfer carries a transfer as the store keeps it, after its id.
// Decoding, the strings it shares with what *t held are *t's, not copies.
func (w wire) transfer(t *ledger.Transfer) {
	if w.E != nil {
		w.E.String(t.ID)
		ledgerstore.EncodeTransfer(w.E, t)
		return
	}
	like := *t
	*t = ledgerstore.DecodeTransfer(w.D, w.D.StrAs(like.ID), &like)
}

func (w wire) batchResults(rs *[]ledger.BatchResult) {
	codec.List(w.Fields, rs, func(r *ledger.BatchResult) {
		w.transfer(&r.Transfer)
		w.Bool(&r.Replayed)
		w.err(&r.Err)
	})
}

func (w wire) results(rs *[]WireResult) {
	codec.List(w.Fields, rs, func(r *WireResult) {
		w.transfer(&r.Transfer)
		w.Bool(&r.Replayed)
		w.domainError(&r.Err)
	})
}

func (w wire) credit(leg *ledger.CreditLeg) {
	w.Str(&leg.TransferID)
	w.Str(&leg.From)
	w.Str(&leg.To)
	w.Int64(&leg.Amount)
	w.Str(&leg.Memo)
	w.Time(&leg.At)
}

func (w wire) query(q *ledger.HistoryQuery) {
	w.Int(&q.Limit)
	w.Uint64(&q.Cursor)
	w.Uint64(&q.Offset)
}

func (w wire) page(p *ledger.HistoryPage) {
	codec.List(w.Fields, &p.Entries, func(e *ledger.Entry) {
		w.Uint64(&e.Seq)
		w.Str(&e.TransferID)
		dir := uint64(e.Direction)
		w.Uint64(&dir)
		e.Direction = ledger.Direction(dir)
		w.Int64(&e.Amount)
		w.Int64(&e.BalanceAfter)
		w.Str(&e.Counterpart)
		w.Str(&e.Memo)
		w.Time(&e.At)
	})
	w.Uint64(&p.NextCursor)
}

func (w wire) stats(s *ShardStats) {
	w.Int64(&s.Accounts)
	w.sums(&s.Balances)
	w.sums(&s.Credits.Sent)
	w.sums(&s.Credits.Received)
}

func (w wire) ints(s *[]int) { codec.List(w.Fields, s, w.Int) }

func (w wire) atomicBatch(b *AtomicBatch) {
	w.Str(&b.ID)
	w.Int(&b.Attempt)
	w.requests(&b.Reqs)
	w.strMap(&b.Currencies)
	w.ints(&b.Chain)
	w.Int(&b.Step)
	w.Bytes(&b.ReplyTo)
	w.Bool(&b.EvalOnly)
	w.results(&b.Results)
	codec.List(w.Fields, &b.Nows, w.Time)
	w.Int(&b.Failed)
	w.domainError(&b.Err)
	w.ints(&b.Reserved)
	w.ints(&b.Skip)
}
