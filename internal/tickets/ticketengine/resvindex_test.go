package ticketengine

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
	var areas areaTable
	x := newResvIndex(&areas)
	ev := &eventState{spec: tickets.EventSpec{EventName: "ev"}}
	area := &areaState{event: ev, spec: tickets.AreaSpec{AreaID: "A"}}
	areas.add(&areaState{event: ev, spec: tickets.AreaSpec{AreaID: "first"}})
	areas.add(area)
	now := time.Now().UTC()
	cases := []struct {
		req     tickets.ReserveRequest
		area    *areaState
		reason  tickets.Reason
		detail  string
		compact bool
	}{
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3}, area, tickets.ReasonNotAvailable, tickets.NoBlockDetail(3, "ev", "A"), true},
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3}, area, tickets.ReasonNotOpen, "not yet", false},
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.SelfPick, Seats: []tickets.Seat{{Row: 1, Col: 2}}}, area, tickets.ReasonInvalidSeat, "ev#A (1, 2) is not a valid seat.", false},
		{tickets.ReserveRequest{EventID: "nope", AreaID: "Z", Kind: tickets.Random, NumOfSeats: 1}, nil, tickets.ReasonInvalidEventArea, "event nope has no area Z", false},
	}
	for _, tc := range cases {
		id := uuid.New()
		r := tickets.NewReservation(id.String(), "user", tc.req, now)
		if err := r.Decide(now, 0, nil, tc.reason, tc.detail); err != nil {
			t.Fatal(err)
		}
		x.open(id)
		x.store(id, r, tc.area)
		if _, compacted := x.stripe(id).soldOut[id]; compacted != tc.compact {
			t.Errorf("%+v: compacted %v", r, compacted)
		}
		got, ok := x.await(context.Background(), id, time.Second)
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("stored %+v\nread   %+v", r, got)
		}
	}
	if _, ok := x.load(uuid.New()); ok {
		t.Fatal("unknown id found")
	}
}
