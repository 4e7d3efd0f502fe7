package ticketstore

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// Ticketing key layout. Every ticketing key starts with 't'.
//
//	te/<event name>      event as created
//	tr/<reservation id>  a reservation that held seats, in its latest state
//	tk/hold              the secret that derives reservations' hold tokens
//
// Failed reservations are not stored: they change nothing, and a flash
// sale fails most requests.
var (
	prefixEvent       = []byte("te/")
	prefixReservation = []byte("tr/")
	keyHoldSecret     = []byte("tk/hold")
)

// HoldSecret returns the secret that derives the tokens proving a
// reservation's ownership, creating it with generate on first use.
func (s Store) HoldSecret(generate func() ([]byte, error)) ([]byte, error) {
	return s.Secret(keyHoldSecret, generate)
}

// PutEvent writes ev as one synced commit.
func (s Store) PutEvent(ev *tickets.EventSpec) error {
	b := s.NewBatch()
	_ = b.Set(store.Key(nil, prefixEvent, ev.EventName), AppendEvent(nil, ev), nil)
	return s.Commit(b)
}

// EachEvent calls fn for every event.
func (s Store) EachEvent(fn func(tickets.EventSpec) error) error {
	return s.Scan(prefixEvent, store.UpperBound(prefixEvent), false, func(_, v []byte) (bool, error) {
		ev, err := DecodeEvent(v)
		if err != nil {
			return false, err
		}
		return true, fn(ev)
	})
}

// Reservation returns the stored reservation id, or ok false if there is
// none.
func (s Store) Reservation(id string) (r *tickets.Reservation, ok bool, err error) {
	v, ok, err := s.Get(store.Key(nil, prefixReservation, id))
	if err != nil || !ok {
		return nil, false, err
	}
	r, err = DecodeReservation(v)
	return r, err == nil, err
}

// EachReservation calls fn for every stored reservation.
func (s Store) EachReservation(fn func(*tickets.Reservation) error) error {
	return s.Scan(prefixReservation, store.UpperBound(prefixReservation), false, func(_, v []byte) (bool, error) {
		r, err := DecodeReservation(v)
		if err != nil {
			return false, err
		}
		return true, fn(r)
	})
}

// TicketBatch writes reservations into a storage batch.
type TicketBatch struct {
	b   *pebble.Batch
	key []byte
	val []byte
}

// NewTicketBatch wraps b.
func NewTicketBatch(b *pebble.Batch) *TicketBatch { return &TicketBatch{b: b} }

// PutReservation writes r's current state, unless it failed.
func (w *TicketBatch) PutReservation(r *tickets.Reservation) {
	if r.State == tickets.Failed {
		return
	}
	w.key = store.Key(w.key, prefixReservation, r.ID)
	w.val = AppendReservation(w.val[:0], r)
	_ = w.b.Set(w.key, w.val, nil) // Set copies; errors only on a closed batch
}

// AppendEvent appends ev's stored record to dst; a cluster carries events
// so too.
func AppendEvent(dst []byte, ev *tickets.EventSpec) []byte {
	e := codec.Encoder{B: dst}
	e.Byte(store.RecordVersion)
	e.String(ev.EventName)
	e.String(ev.Artist)
	e.Uvarint(uint64(len(ev.Areas)))
	for _, a := range ev.Areas {
		e.String(a.AreaID)
		e.Varint(a.Price)
		e.Uvarint(uint64(a.RowCount))
		e.Uvarint(uint64(a.ColCount))
	}
	for _, t := range []time.Time{ev.ReservationOpeningTime, ev.ReservationClosingTime, ev.EventStartTime, ev.EventEndTime} {
		e.Varint(optionalTime(t))
	}
	e.Varint(int64(ev.HoldTime))
	e.String(ev.Organizer)
	e.Uvarint(uint64(ev.PerUserSeatLimit))
	return e.B
}

// DecodeEvent decodes an event AppendEvent encoded.
func DecodeEvent(b []byte) (tickets.EventSpec, error) {
	d := codec.Decoder{B: b}
	if d.Byte() != store.RecordVersion {
		return tickets.EventSpec{}, codec.ErrCorrupt
	}
	ev := tickets.EventSpec{EventName: d.Str(), Artist: d.Str()}
	n := d.Uvarint()
	if n > tickets.MaxAreas {
		return tickets.EventSpec{}, codec.ErrCorrupt
	}
	for range n {
		ev.Areas = append(ev.Areas, tickets.AreaSpec{AreaID: d.Str(), Price: d.Varint(), RowCount: int(d.Uvarint()), ColCount: int(d.Uvarint())})
	}
	for _, t := range []*time.Time{&ev.ReservationOpeningTime, &ev.ReservationClosingTime, &ev.EventStartTime, &ev.EventEndTime} {
		*t = fromOptionalTime(d.Varint())
	}
	ev.HoldTime = time.Duration(d.Varint())
	ev.Organizer = d.Str()
	ev.PerUserSeatLimit = int(d.Uvarint())
	return ev, d.Done()
}

// AppendReservation appends r's stored record to dst; a cluster's owner
// stores its reservations so too, failed ones included.
func AppendReservation(dst []byte, r *tickets.Reservation) []byte {
	e := codec.Encoder{B: dst}
	e.Byte(store.RecordVersion)
	e.String(r.ID)
	e.String(r.UserID)
	e.String(r.EventID)
	e.String(r.AreaID)
	e.Uvarint(uint64(r.NumOfSeats))
	e.String(string(r.Kind))
	e.Uvarint(uint64(len(r.Seats)))
	for _, s := range r.Seats {
		e.Uvarint(uint64(s.Row))
		e.Uvarint(uint64(s.Col))
	}
	e.String(string(r.State))
	e.Varint(r.CreatedAt.UnixNano())
	e.Varint(r.UpdatedAt.UnixNano())
	e.Varint(optionalTime(r.HoldUntil)) // zero for a failed one
	e.String(r.PaymentID)
	if r.State == tickets.Failed { // last, so records without them load
		e.String(string(r.FailedReason))
		e.String(r.Detail)
	}
	return e.B
}

// DecodeReservation decodes a record AppendReservation encoded.
func DecodeReservation(b []byte) (*tickets.Reservation, error) {
	d := codec.Decoder{B: b}
	if d.Byte() != store.RecordVersion {
		return nil, codec.ErrCorrupt
	}
	r := &tickets.Reservation{ID: d.Str(), UserID: d.Str(), EventID: d.Str(), AreaID: d.Str(), NumOfSeats: int(d.Uvarint())}
	r.Kind = tickets.Kind(d.Str())
	n := d.Uvarint()
	if n > tickets.MaxSeatsPerReservation {
		return nil, codec.ErrCorrupt
	}
	r.Seats = make([]tickets.Seat, n)
	for i := range r.Seats {
		r.Seats[i] = tickets.Seat{Row: int(d.Uvarint()), Col: int(d.Uvarint())}
	}
	r.State = tickets.State(d.Str())
	r.CreatedAt, r.UpdatedAt, r.HoldUntil = store.UnixNano(d.Varint()), store.UnixNano(d.Varint()), fromOptionalTime(d.Varint())
	r.PaymentID = d.Str()
	if r.State == tickets.Failed {
		r.FailedReason, r.Detail = tickets.Reason(d.Str()), d.Str()
	}
	return r, d.Done()
}

// optionalTime stores a zero time as 0, which no real event time is.
func optionalTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromOptionalTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return store.UnixNano(n)
}
