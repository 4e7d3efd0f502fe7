package ticketengine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/tickets"
)

// A failed reservation is kept compactly and must read back as it was
// (an empty seat list, as ticket-master's client sends for RANDOM, reads
// back as none).
func TestIndexKeepsFailuresWhole(t *testing.T) {
	var areas areaTable
	x := newResvIndex(&areas, time.Hour, 1<<20)
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
		{tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3, Seats: []tickets.Seat{}}, area, tickets.ReasonNotAvailable, tickets.NoBlockDetail(3, "ev", "A"), true},
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
		if _, compacted := x.stripe(id).settled[0].soldOut[id]; compacted != tc.compact {
			t.Errorf("%+v: compacted %v", r, compacted)
		}
		want := *r
		if len(want.Seats) == 0 {
			want.Seats = nil
		}
		got, ok := x.await(context.Background(), id, time.Second)
		if !ok || !reflect.DeepEqual(*got, want) {
			t.Errorf("stored %+v\nread   %+v", r, got)
		}
	}
	if _, ok := x.load(uuid.New()); ok {
		t.Fatal("unknown id found")
	}
}

// failAll stores n failed reservations, half sold out and half for an
// unknown area, and returns their ids.
func failAll(x *resvIndex, area *areaState, n int) []uuid.UUID {
	now := time.Now().UTC()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		req := tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 2}
		reason, detail, a := tickets.ReasonNotAvailable, tickets.NoBlockDetail(2, "ev", "A"), area
		if i%2 == 1 {
			req.EventID, req.AreaID = "no-such-event", "Z"
			reason, detail, a = tickets.ReasonInvalidEventArea, "event no-such-event has no area Z", nil
		}
		r := tickets.NewReservation(ids[i].String(), "user", req, now)
		if err := r.Decide(now, 0, nil, reason, detail); err != nil {
			panic(err)
		}
		x.open(ids[i])
		x.store(ids[i], r, a)
	}
	return ids
}

func testArea() (*areaTable, *areaState) {
	var areas areaTable
	area := &areaState{event: &eventState{spec: tickets.EventSpec{EventName: "ev"}}, spec: tickets.AreaSpec{AreaID: "A"}}
	areas.add(area)
	return &areas, area
}

// However many reservations fail, the failures kept stay within the
// memory budget; the newest are still found and the dropped ones counted.
func TestIndexBoundsFailures(t *testing.T) {
	areas, area := testArea()
	const budget = 256 << 10
	x := newResvIndex(areas, time.Hour, budget)
	ids := failAll(x, area, 100_000)
	n, bytes := x.retained()
	if bytes > budget || n == 0 {
		t.Fatalf("%d failures kept in %d bytes, budget %d", n, bytes, budget)
	}
	if got := int64(n) + x.forgotten.Load(); got != int64(len(ids)) {
		t.Fatalf("kept %d + forgotten %d, want %d", n, x.forgotten.Load(), len(ids))
	}
	if _, ok := x.load(ids[len(ids)-1]); !ok {
		t.Fatal("the newest failure is forgotten")
	}
	if _, ok := x.load(ids[0]); ok {
		t.Fatal("the oldest failure is still kept past the budget")
	}
}

// A failure is kept a whole retention period, and forgotten within two
// once no new ones arrive.
func TestIndexForgetsFailuresAfterRetention(t *testing.T) {
	areas, area := testArea()
	x := newResvIndex(areas, time.Minute, 1<<30)
	ids := failAll(x, area, 10)
	start := time.Now()
	x.expire(start.Add(59 * time.Second))
	for _, id := range ids {
		if _, ok := x.load(id); !ok {
			t.Fatal("a failure is forgotten within its retention")
		}
	}
	x.expire(start.Add(61 * time.Second))
	x.expire(start.Add(122 * time.Second))
	if n, _ := x.retained(); n != 0 || x.forgotten.Load() != int64(len(ids)) {
		t.Fatalf("%d failures kept, %d forgotten after two retentions", n, x.forgotten.Load())
	}
	if _, ok := x.load(ids[0]); ok {
		t.Fatal("a failure is still found after two retentions")
	}
}
