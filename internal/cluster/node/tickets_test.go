package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// roundOf applies cmds to a fresh load of db's tickets, as an owner's
// round, and writes the round's records back.
func roundOf(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) *ticketSlice {
	t.Helper()
	slices, err := newTicketSlices(db, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := slices[0].(*ticketSlice)
	s.Apply(cmds, now)
	b := db.NewBatch()
	s.Write(b)
	if err := db.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	s.Finish()
	return s
}

// An area's owner, loaded again from what its rounds wrote, never sells a
// held seat twice, and a hold that ran out gives its seats back.
func TestTicketOwnerKeepsSeatsAcrossLoads(t *testing.T) {
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	ev := &tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 2, ColCount: 2}}}
	roundOf(t, db, now, &ticketCommand{Op: tkCreateArea, Event: ev, AreaID: "A"})
	reserve := func(i int) *ticketCommand {
		return &ticketCommand{Op: tkReserve, ID: fmt.Sprint("r", i), User: "u", Req: &tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1}}
	}
	held := map[tickets.Seat]string{}
	for i := range 5 { // a load per reservation: 4 seats, the fifth fails
		c := reserve(i)
		roundOf(t, db, now, c)
		r := c.Reservation
		if i == 4 {
			if r.State != tickets.Failed {
				t.Fatalf("fifth reservation of 4 seats: %s", r.State)
			}
			continue
		}
		if r.State != tickets.Reserved || len(r.Seats) != 1 {
			t.Fatalf("reservation %d: %+v", i, r)
		}
		if other, ok := held[r.Seats[0]]; ok {
			t.Fatalf("seat %v sold to %s and %s", r.Seats[0], other, r.ID)
		}
		held[r.Seats[0]] = r.ID
	}
	later := now.Add(61 * time.Second)
	roundOf(t, db, later, engine.Tick{})
	again := reserve(9)
	s := roundOf(t, db, later, again)
	if again.Reservation.State != tickets.Reserved || s.areas[areaKey("gig", "A")].seats.Free() != 3 {
		t.Fatalf("after the holds ran out: %+v, %d free", again.Reservation, s.areas[areaKey("gig", "A")].seats.Free())
	}
}
