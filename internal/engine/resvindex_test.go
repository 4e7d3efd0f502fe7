package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/tickets"
)

// A failed reservation is kept compactly and must read back as it was.
func TestIndexKeepsFailuresWhole(t *testing.T) {
	x := newResvIndex()
	now := time.Now().UTC()
	cases := []struct {
		req    tickets.ReserveRequest
		reason tickets.Reason
		detail string
	}{
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3}, tickets.ReasonNotAvailable, tickets.NoBlockDetail(3, "ev", "A")},
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.SelfPick, Seats: []tickets.Seat{{Row: 1, Col: 2}}}, tickets.ReasonInvalidSeat, "ev#A (1, 2) is not a valid seat."},
		{tickets.ReserveRequest{EventID: "nope", AreaID: "Z", Kind: tickets.Random, NumOfSeats: 1}, tickets.ReasonInvalidEventArea, "event nope has no area Z"},
	}
	for _, tc := range cases {
		id := uuid.New()
		r := tickets.NewReservation(id.String(), "user", tc.req, now)
		if err := r.Decide(now, 0, nil, tc.reason, tc.detail); err != nil {
			t.Fatal(err)
		}
		x.open(id)
		x.store(id, r)
		got, ok := x.await(context.Background(), id, time.Second)
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("stored %+v\nread   %+v", r, got)
		}
	}
	if _, ok := x.load(uuid.New()); ok {
		t.Fatal("unknown id found")
	}
}
