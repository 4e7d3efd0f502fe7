package store

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
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
func (s *Store) HoldSecret(generate func() ([]byte, error)) ([]byte, error) {
	return s.secret(keyHoldSecret, generate)
}

// PutEvent writes ev as one synced commit.
func (s *Store) PutEvent(ev *tickets.EventSpec) error {
	b := s.NewBatch()
	_ = b.Set(key(nil, prefixEvent, ev.EventName), encodeEvent(nil, ev), nil)
	return s.Commit(b)
}

// EachEvent calls fn for every event.
func (s *Store) EachEvent(fn func(tickets.EventSpec) error) error {
	return s.Scan(prefixEvent, upperBound(prefixEvent), false, func(_, v []byte) (bool, error) {
		ev, err := decodeEvent(v)
		if err != nil {
			return false, err
		}
		return true, fn(ev)
	})
}

// EachReservation calls fn for every stored reservation.
func (s *Store) EachReservation(fn func(*tickets.Reservation) error) error {
	return s.Scan(prefixReservation, upperBound(prefixReservation), false, func(_, v []byte) (bool, error) {
		r, err := decodeReservation(v)
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
	w.key = key(w.key, prefixReservation, r.ID)
	w.val = encodeReservation(w.val[:0], r)
	_ = w.b.Set(w.key, w.val, nil) // Set copies; errors only on a closed batch
}

func encodeEvent(dst []byte, ev *tickets.EventSpec) []byte {
	e := encoder{dst}
	e.byte(recordVersion)
	e.string(ev.EventName)
	e.string(ev.Artist)
	e.uvarint(uint64(len(ev.Areas)))
	for _, a := range ev.Areas {
		e.string(a.AreaID)
		e.varint(a.Price)
		e.uvarint(uint64(a.RowCount))
		e.uvarint(uint64(a.ColCount))
	}
	for _, t := range []time.Time{ev.ReservationOpeningTime, ev.ReservationClosingTime, ev.EventStartTime, ev.EventEndTime} {
		e.varint(optionalTime(t))
	}
	e.varint(int64(ev.HoldTime))
	e.string(ev.Organizer)
	e.uvarint(uint64(ev.PerUserSeatLimit))
	return e.b
}

func decodeEvent(b []byte) (tickets.EventSpec, error) {
	d := newDecoder(b)
	if d.Byte() != recordVersion {
		return tickets.EventSpec{}, errCorrupt
	}
	ev := tickets.EventSpec{EventName: d.Str(), Artist: d.Str()}
	n := d.Uvarint()
	if n > tickets.MaxAreas {
		return tickets.EventSpec{}, errCorrupt
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

func encodeReservation(dst []byte, r *tickets.Reservation) []byte {
	e := encoder{dst}
	e.byte(recordVersion)
	e.string(r.ID)
	e.string(r.UserID)
	e.string(r.EventID)
	e.string(r.AreaID)
	e.uvarint(uint64(r.NumOfSeats))
	e.string(string(r.Kind))
	e.uvarint(uint64(len(r.Seats)))
	for _, s := range r.Seats {
		e.uvarint(uint64(s.Row))
		e.uvarint(uint64(s.Col))
	}
	e.string(string(r.State))
	e.varint(r.CreatedAt.UnixNano())
	e.varint(r.UpdatedAt.UnixNano())
	e.varint(r.HoldUntil.UnixNano())
	e.string(r.PaymentID)
	return e.b
}

func decodeReservation(b []byte) (*tickets.Reservation, error) {
	d := newDecoder(b)
	if d.Byte() != recordVersion {
		return nil, errCorrupt
	}
	r := &tickets.Reservation{ID: d.Str(), UserID: d.Str(), EventID: d.Str(), AreaID: d.Str(), NumOfSeats: int(d.Uvarint())}
	r.Kind = tickets.Kind(d.Str())
	n := d.Uvarint()
	if n > tickets.MaxSeatsPerReservation {
		return nil, errCorrupt
	}
	r.Seats = make([]tickets.Seat, n)
	for i := range r.Seats {
		r.Seats[i] = tickets.Seat{Row: int(d.Uvarint()), Col: int(d.Uvarint())}
	}
	r.State = tickets.State(d.Str())
	r.CreatedAt, r.UpdatedAt, r.HoldUntil = unixNano(d.Varint()), unixNano(d.Varint()), unixNano(d.Varint())
	r.PaymentID = d.Str()
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
	return unixNano(n)
}
