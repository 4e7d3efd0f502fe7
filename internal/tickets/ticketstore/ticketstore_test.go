package ticketstore

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// A reservation that holds seats is stored as it always was, field by
// field, so the records of existing data directories load; a failed one
// (which only a cluster stores) keeps its reason and detail, and no hold.
func TestReservationRecords(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 7).UTC() }
	held := &tickets.Reservation{ID: "r1", UserID: "u", EventID: "gig", AreaID: "A", NumOfSeats: 2, Kind: tickets.Random,
		Seats: []tickets.Seat{{Row: 0, Col: 1}, {Row: 0, Col: 2}}, State: tickets.Paid,
		CreatedAt: at(1), UpdatedAt: at(2), HoldUntil: at(3), PaymentID: "pay-r1-00000001"}
	e := codec.Encoder{}
	e.Byte(store.RecordVersion)
	for _, s := range []string{"r1", "u", "gig", "A"} {
		e.String(s)
	}
	e.Uvarint(2)
	e.String("RANDOM")
	e.Uvarint(2)
	for _, v := range []uint64{0, 1, 0, 2} {
		e.Uvarint(v)
	}
	e.String("PAID")
	for _, s := range []int64{1, 2, 3} {
		e.Varint(at(s).UnixNano())
	}
	e.String("pay-r1-00000001")
	if got := AppendReservation(nil, held); !bytes.Equal(got, e.B) {
		t.Fatalf("a held reservation's record\n %x, stored before as\n %x", got, e.B)
	}
	failed := &tickets.Reservation{ID: "r2", UserID: "u", EventID: "gig", AreaID: "Z", NumOfSeats: 1, Kind: tickets.Random,
		State: tickets.Failed, FailedReason: tickets.ReasonInvalidEventArea, Detail: "event gig has no area Z",
		Seats: []tickets.Seat{}, CreatedAt: at(1), UpdatedAt: at(1)}
	for _, r := range []*tickets.Reservation{held, failed} {
		back, err := DecodeReservation(AppendReservation(nil, r))
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("%s came back as %+v (%v)", r.ID, back, err)
		}
	}
}
