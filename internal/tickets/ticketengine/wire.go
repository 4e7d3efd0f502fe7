package ticketengine

import (
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
)

// Ticketing's commands: one type per operation, with its arguments and,
// once applied, its outcome. A single process's shards apply Reserve,
// Cancel and Inspect (open.go); a cluster's apply them all and carry them
// between nodes (cluster.go). On the wire a command is its Op byte and
// its arguments; an outcome, the Op byte and the outcome's fields of the
// command's type. Both are binary (internal/codec); each type lists its
// fields once, in one method that encodes or decodes them (wire).

// Op names a ticketing operation on the wire.
type Op uint8

// Operations.
const (
	OpCreateEvent Op = iota + 1
	OpCreateArea
	OpEvent
	OpAreaFree
	OpReserve
	OpReservation
	OpCancel
	OpInspect
	OpHoldSecret
	OpPay
	OpPayEnd
	OpClaim
	OpRelease
	OpFlush
)

// ReadOnly reports whether an operation changes nothing: sent twice, it
// does no more than once.
func (o Op) ReadOnly() bool {
	return o == OpEvent || o == OpAreaFree || o == OpReservation || o == OpInspect
}

// Command is a ticketing command: one of the types below.
type Command interface {
	engine.Command
	// Op is the command's operation.
	Op() Op
	// args and outcome encode or decode the arguments and the outcome.
	args(w wire)
	outcome(w wire)
}

// The commands, each with its arguments and its outcome.
type (
	// CreateEvent records an event in its name's partition; Created is
	// false for a replay of an identical event, Conflict true for one that
	// differs.
	CreateEvent struct {
		Spec              tickets.EventSpec
		Created, Conflict bool
	}
	// CreateArea opens area Area of event Spec in the area's partition;
	// Currency is the organizer's, which its payments need.
	CreateArea struct {
		Spec           tickets.EventSpec
		Area, Currency string
	}
	// ReadEvent reads an event; Spec is nil if there is none.
	ReadEvent struct {
		Name string
		Spec *tickets.EventSpec
	}
	// AreaFree reads the free seats of an area.
	AreaFree struct {
		Event, Area string
		Found       bool
		Free        int
		SoldOutAt   time.Time
	}
	// Reserve decides a reservation in its area's partition. Verdict is
	// the user's seat-limit claim's, in an event with a limit; ReplyTo is
	// where the decision goes when a later step of a chain decides it.
	// The outcome is the decision and the event's seat limit, which the
	// requesting node keeps.
	Reserve struct {
		ID, User    string
		Req         tickets.ReserveRequest
		Verdict     Verdict
		Limit       int
		ReplyTo     []byte
		Reservation *tickets.Reservation
		from        []byte
		deferred    bool
		// filed is the reservation a single process filed at its edge,
		// which its shard decides as it is.
		filed *tickets.Reservation
	}
	// ReadReservation reads a reservation; nil if there is none.
	ReadReservation struct {
		ID          string
		Reservation *tickets.Reservation
	}
	// Cancel gives a held reservation's seats back; Err says why not.
	Cancel struct {
		ID          string
		Reservation *tickets.Reservation
		Err         *ledger.Error
	}
	// Inspect reads an area's seat map and holders; Seats is nil for an
	// unknown area.
	Inspect struct {
		Event, Area string
		Seats       *tickets.AreaSeats
	}
	// HoldSecret proposes a hold secret; Secret is the cluster's, the
	// first one proposed.
	HoldSecret struct {
		Proposed, Secret []byte
	}
	// Pay pays reservation ID from Account (cluster_pay.go). Err is the
	// desk's or the ledger's refusal; Fault, the ledger's fault.
	Pay struct {
		ID, Account string
		Reservation *tickets.Reservation
		Err         *ledger.Error
		Fault       string
		from        []byte
		deferred    bool
	}
	// PayEnd is a payment attempt's debit's outcome, Ledger (the ledger's
	// wire outcome), back on the reservation's partition.
	PayEnd struct {
		ID      string
		Attempt uint32
		Ledger  []byte
	}
	// Claim claims a reservation's seats on its user's partition under
	// Limit (cluster_limit.go); the area's partition's Reserve answers it.
	Claim struct {
		ID, User string
		Req      tickets.ReserveRequest
		Limit    int
		ReplyTo  []byte
		from     []byte
	}
	// Release gives reservation ID's claim back to its user's partition.
	Release struct {
		ID, User, Event string
	}
	// Flush changes nothing: an idle owner appends one so that a round
	// comes and commits what its engine's own rounds (Ticks) left.
	Flush struct{}
)

// Verdict is a seat-limit claim's, carried to the area's partition.
type Verdict uint8

// Verdicts.
const (
	// Unclaimed: no claim was made (an event without a limit, or not yet).
	Unclaimed Verdict = iota
	Granted
	Refused
)

func (*CreateEvent) Op() Op     { return OpCreateEvent }
func (*CreateArea) Op() Op      { return OpCreateArea }
func (*ReadEvent) Op() Op       { return OpEvent }
func (*AreaFree) Op() Op        { return OpAreaFree }
func (*Reserve) Op() Op         { return OpReserve }
func (*ReadReservation) Op() Op { return OpReservation }
func (*Cancel) Op() Op          { return OpCancel }
func (*Inspect) Op() Op         { return OpInspect }
func (*HoldSecret) Op() Op      { return OpHoldSecret }
func (*Pay) Op() Op             { return OpPay }
func (*PayEnd) Op() Op          { return OpPayEnd }
func (*Claim) Op() Op           { return OpClaim }
func (*Release) Op() Op         { return OpRelease }
func (*Flush) Op() Op           { return OpFlush }

func (c *CreateEvent) args(w wire)    { w.event(&c.Spec) }
func (c *CreateEvent) outcome(w wire) { w.Bool(&c.Created); w.Bool(&c.Conflict) }
func (c *CreateArea) args(w wire)     { w.event(&c.Spec); w.Str(&c.Area); w.Str(&c.Currency) }
func (c *CreateArea) outcome(wire)    {}
func (c *ReadEvent) args(w wire)      { w.Str(&c.Name) }
func (c *ReadEvent) outcome(w wire)   { w.optEvent(&c.Spec) }
func (c *AreaFree) args(w wire)       { w.Str(&c.Event); w.Str(&c.Area) }
func (c *AreaFree) outcome(w wire)    { w.Bool(&c.Found); w.Int(&c.Free); w.Time(&c.SoldOutAt) }
func (c *Reserve) args(w wire) {
	w.Str(&c.ID)
	w.Str(&c.User)
	w.request(&c.Req)
	w.Byte((*uint8)(&c.Verdict))
	w.Int(&c.Limit)
	w.Bytes(&c.ReplyTo)
}
func (c *Reserve) outcome(w wire)         { w.optReservation(&c.Reservation); w.Int(&c.Limit) }
func (c *ReadReservation) args(w wire)    { w.Str(&c.ID) }
func (c *ReadReservation) outcome(w wire) { w.optReservation(&c.Reservation) }
func (c *Cancel) args(w wire)             { w.Str(&c.ID) }
func (c *Cancel) outcome(w wire)          { w.optReservation(&c.Reservation); w.err(&c.Err) }
func (c *Inspect) args(w wire)            { w.Str(&c.Event); w.Str(&c.Area) }
func (c *Inspect) outcome(w wire)         { w.optSeats(&c.Seats) }
func (c *HoldSecret) args(w wire)         { w.Bytes(&c.Proposed) }
func (c *HoldSecret) outcome(w wire)      { w.Bytes(&c.Secret) }
func (c *Pay) args(w wire)                { w.Str(&c.ID); w.Str(&c.Account) }
func (c *Pay) outcome(w wire) {
	w.optReservation(&c.Reservation)
	w.err(&c.Err)
	w.Str(&c.Fault)
}
func (c *PayEnd) args(w wire)  { w.Str(&c.ID); w.Uint32(&c.Attempt); w.Bytes(&c.Ledger) }
func (c *PayEnd) outcome(wire) {}
func (c *Claim) args(w wire) {
	w.Str(&c.ID)
	w.Str(&c.User)
	w.request(&c.Req)
	w.Int(&c.Limit)
	w.Bytes(&c.ReplyTo)
}
func (c *Claim) outcome(wire)   {}
func (c *Release) args(w wire)  { w.Str(&c.ID); w.Str(&c.User); w.Str(&c.Event) }
func (c *Release) outcome(wire) {}
func (*Flush) args(wire)        {}
func (*Flush) outcome(wire)     {}

// newCommand returns an empty command of op, nil for an unknown op.
func newCommand(op Op) Command {
	switch op {
	case OpCreateEvent:
		return &CreateEvent{}
	case OpCreateArea:
		return &CreateArea{}
	case OpEvent:
		return &ReadEvent{}
	case OpAreaFree:
		return &AreaFree{}
	case OpReserve:
		return &Reserve{}
	case OpReservation:
		return &ReadReservation{}
	case OpCancel:
		return &Cancel{}
	case OpInspect:
		return &Inspect{}
	case OpHoldSecret:
		return &HoldSecret{}
	case OpPay:
		return &Pay{}
	case OpPayEnd:
		return &PayEnd{}
	case OpClaim:
		return &Claim{}
	case OpRelease:
		return &Release{}
	case OpFlush:
		return &Flush{}
	}
	return nil
}

// Encode encodes c's operation and arguments.
func Encode(c Command) []byte {
	return codec.EncodeOp(byte(c.Op()), func(f *codec.Fields) { c.args(wire{f}) })
}

// AppendEncode appends c encoded as Encode encodes it to dst: after the
// workload's byte a cluster's calls put first.
func AppendEncode(dst []byte, c Command) []byte {
	return codec.AppendOp(dst, byte(c.Op()), func(f *codec.Fields) { c.args(wire{f}) })
}

// Decode decodes a command Encode encoded.
func Decode(b []byte) (Command, error) {
	var c Command
	op, err := codec.DecodeOp(b, func(op byte, f *codec.Fields) bool {
		if c = newCommand(Op(op)); c != nil {
			c.args(wire{f})
		}
		return c != nil
	})
	if err != nil {
		return nil, fmt.Errorf("ticketengine: decoding operation %d: %w", op, err)
	}
	return c, nil
}

// EncodeOutcome encodes c's outcome, after c's Op byte: never empty.
func EncodeOutcome(c Command) []byte {
	return codec.EncodeOp(byte(c.Op()), func(f *codec.Fields) { c.outcome(wire{f}) })
}

// DecodeOutcome decodes an outcome EncodeOutcome encoded into c, a command
// of the same operation.
func DecodeOutcome(c Command, b []byte) error {
	if err := codec.DecodeAs(b, byte(c.Op()), func(f *codec.Fields) { c.outcome(wire{f}) }); err != nil {
		return fmt.Errorf("ticketengine: decoding an outcome of operation %d: %w", c.Op(), err)
	}
	return nil
}

// wire encodes fields into E, or decodes them from D (codec.Fields), with
// ticketing's own fields beside codec's. It is passed by value, a pointer
// wide, so that handing it to a command's methods allocates nothing.
type wire struct{ *codec.Fields }

// event carries an event as ticketstore stores it.
func (w wire) event(ev *tickets.EventSpec) {
	if w.E != nil {
		w.E.String(string(ticketstore.AppendEvent(nil, ev)))
		return
	}
	b := w.D.Bytes()
	if w.D.Err != nil {
		return
	}
	var err error
	if *ev, err = ticketstore.DecodeEvent(b); err != nil {
		w.D.Fail()
	}
}

func (w wire) optEvent(ev **tickets.EventSpec) {
	if !w.Present(*ev != nil) {
		return
	}
	if w.D != nil {
		*ev = &tickets.EventSpec{}
	}
	w.event(*ev)
}

func (w wire) seats(s *[]tickets.Seat) {
	n := len(*s)
	w.Int(&n)
	if w.D != nil {
		if n < 0 || n > tickets.MaxSeatsPerReservation {
			w.D.Fail()
			return
		}
		*s = nil
		if n > 0 {
			*s = make([]tickets.Seat, n)
		}
	}
	for i := range *s {
		w.Int(&(*s)[i].Row)
		w.Int(&(*s)[i].Col)
	}
}

func (w wire) request(r *tickets.ReserveRequest) {
	w.Str(&r.EventID)
	w.Str(&r.AreaID)
	w.Str((*string)(&r.Kind))
	w.Int(&r.NumOfSeats)
	w.seats(&r.Seats)
}

func (w wire) reservation(r *tickets.Reservation) {
	for _, s := range []*string{&r.ID, &r.UserID, &r.EventID, &r.AreaID, (*string)(&r.Kind), (*string)(&r.State),
		(*string)(&r.FailedReason), &r.Detail, &r.PaymentID} {
		w.Str(s)
	}
	w.Int(&r.NumOfSeats)
	w.seats(&r.Seats)
	for _, t := range []*time.Time{&r.CreatedAt, &r.UpdatedAt, &r.HoldUntil} {
		w.Time(t)
	}
}

func (w wire) optReservation(r **tickets.Reservation) {
	if !w.Present(*r != nil) {
		return
	}
	if w.D != nil {
		*r = &tickets.Reservation{}
	}
	w.reservation(*r)
}

func (w wire) err(e **ledger.Error) {
	if !w.Present(*e != nil) {
		return
	}
	if w.D != nil {
		*e = &ledger.Error{}
	}
	w.Str((*string)(&(*e).Code))
	w.Str(&(*e).Detail)
}

// optSeats carries an area's seat map and holders.
func (w wire) optSeats(s **tickets.AreaSeats) {
	if !w.Present(*s != nil) {
		return
	}
	if w.D != nil {
		*s = &tickets.AreaSeats{}
	}
	a := *s
	w.Str(&a.Spec.AreaID)
	w.Int(&a.Spec.RowCount)
	w.Int(&a.Spec.ColCount)
	price := int(a.Spec.Price)
	w.Int(&price)
	a.Spec.Price = int64(price)
	w.Int(&a.Available)
	w.strings(&a.SeatMap)
	codec.List(w.Fields, &a.Holders, w.reservation)
}

func (w wire) strings(s *[]string) { codec.List(w.Fields, s, w.Str) }
