package ticketengine

import (
	"bytes"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
)

// The owner's records (its store and its partition's changelog), binary
// (internal/codec), each behind store.RecordVersion; events and
// reservations are ticketstore's records, as a single process stores
// them:
//
//	tc/e/<event>       the event
//	tc/a/<area key>    an area: its event, its id, the organizer's currency
//	tc/r/<id>          a reservation, failed ones included (reads and
//	                   retried requests find them)
//	tc/s               the cluster's hold secret
//	tc/p/<id>          a payment begun: its attempt, whether it is in
//	                   flight, since when, and the nodes waiting for it
//	tc/u/<limit key>   a user's seat claims in a limited event
var (
	tkEventPrefix = []byte("tc/e/")
	tkAreaPrefix  = []byte("tc/a/")
	tkResvPrefix  = []byte("tc/r/")
	tkSecretKey   = []byte("tc/s")
	tkPayPrefix   = []byte("tc/p/")
	tkUserPrefix  = []byte("tc/u/")
)

func tkKey(prefix []byte, id string) []byte { return append(append([]byte(nil), prefix...), id...) }

// areaRecord is an area's record.
type areaRecord struct {
	event          tickets.EventSpec
	area, currency string
}

func encodeArea(ev *tickets.EventSpec, area, currency string) []byte {
	e := codec.Encoder{}
	e.Byte(store.RecordVersion)
	e.String(string(ticketstore.AppendEvent(nil, ev)))
	e.String(area)
	e.String(currency)
	return e.B
}

func decodeArea(b []byte) (areaRecord, error) {
	d := versioned(b)
	ev, area, currency := d.Bytes(), d.Str(), d.Str()
	if err := d.Done(); err != nil {
		return areaRecord{}, err
	}
	spec, err := ticketstore.DecodeEvent(ev)
	return areaRecord{event: spec, area: area, currency: currency}, err
}

func encodePay(p *payState) []byte {
	e := codec.Encoder{}
	e.Byte(store.RecordVersion)
	e.Uvarint(uint64(p.Attempt))
	e.Bool(p.Paying)
	e.Varint(p.Began.UnixNano())
	e.Uvarint(uint64(len(p.Waiting)))
	for _, to := range p.Waiting {
		e.String(string(to))
	}
	return e.B
}

func decodePay(b []byte) (*payState, error) {
	d := versioned(b)
	p := &payState{Attempt: uint32(d.Uvarint()), Paying: d.Bool(), Began: time.Unix(0, d.Varint()).UTC()}
	for n := d.Uvarint(); n > 0 && d.Err == nil; n-- {
		p.Waiting = append(p.Waiting, bytes.Clone(d.Bytes()))
	}
	return p, d.Done()
}

func encodeClaims(u *tickets.SeatClaims) []byte {
	e := codec.Encoder{}
	e.Byte(store.RecordVersion)
	e.Uvarint(uint64(len(u.ByRes)))
	for id, n := range u.ByRes {
		e.String(id)
		e.Uvarint(uint64(n))
	}
	return e.B
}

func decodeClaims(b []byte) (*tickets.SeatClaims, error) {
	d := versioned(b)
	u := &tickets.SeatClaims{ByRes: map[string]int{}}
	for n := d.Uvarint(); n > 0 && d.Err == nil; n-- {
		id, seats := d.Str(), int(d.Uvarint())
		u.ByRes[id] = seats
		u.Held += seats
	}
	return u, d.Done()
}

// versioned is a decoder of b past its version byte, failed if the byte
// is not store.RecordVersion.
func versioned(b []byte) *codec.Decoder {
	d := &codec.Decoder{B: b}
	if d.Byte() != store.RecordVersion {
		d.Fail()
	}
	return d
}

// loadRecords calls fn with each record under prefix, decoded, and its key
// after the prefix.
func loadRecords[T any](db *store.Store, prefix []byte, decode func([]byte) (T, error), fn func(string, T)) error {
	return db.Scan(prefix, store.UpperBound(prefix), false, func(k, v []byte) (bool, error) {
		rec, err := decode(v)
		if err != nil {
			return false, fmt.Errorf("ticketengine: record %q: %w", k, err)
		}
		fn(string(bytes.TrimPrefix(k, prefix)), rec)
		return true, nil
	})
}
