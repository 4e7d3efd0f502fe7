package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// openStore opens a store in a temporary directory, closed at the test's
// end.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// roundOf applies cmds to a fresh load of db's tickets, as an owner's
// round, and writes the round's records back.
func roundOf(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) *ticketSlice {
	t.Helper()
	s, _ := roundOwing(t, db, now, cmds...)
	return s
}

// roundOwing is roundOf, returning also the records the round owes other
// partitions and waiting nodes.
func roundOwing(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) (*ticketSlice, []kafkalog.Output) {
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
	var owed []kafkalog.Output
	for _, f := range s.Forwards(nil) {
		owed = append(owed, f.Cmd.(owedOutput).out)
	}
	s.Finish()
	return s, owed
}

// An area's owner, loaded again from what its rounds wrote, never sells a
// held seat twice, and a hold that ran out gives its seats back.
func TestTicketOwnerKeepsSeatsAcrossLoads(t *testing.T) {
	db := openStore(t)
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
	if again.Reservation.State != tickets.Reserved || s.areas[tickets.AreaKey("gig", "A")].seats.Free() != 3 {
		t.Fatalf("after the holds ran out: %+v, %d free", again.Reservation, s.areas[tickets.AreaKey("gig", "A")].seats.Free())
	}
}

// Cancelling on the area's owner gives the seats back and takes the
// reservation off the seat map's holders, across loads; a second cancel
// is a replay, and a reservation that holds no seats is refused.
func TestTicketOwnerCancelsAndShowsItsSeatMap(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	ev := &tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 3}}}
	key := tickets.AreaKey("gig", "A")
	reserve := func(id string, n int) *ticketCommand {
		return &ticketCommand{Op: tkReserve, ID: id, User: "u", Req: &tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: n}}
	}
	roundOf(t, db, now, &ticketCommand{Op: tkCreateArea, Event: ev, AreaID: "A"}, reserve("r1", 2), reserve("r2", 2))
	seats := &ticketCommand{Op: tkInspect, ID: key}
	roundOf(t, db, now, seats)
	if seats.Seats == nil || seats.Seats.Available != 1 || len(seats.Seats.Holders) != 1 || seats.Seats.Holders[0].ID != "r1" {
		t.Fatalf("seat map before the cancel: %+v", seats.Seats)
	}
	first, again, failed := &ticketCommand{Op: tkCancel, ID: "r1"}, &ticketCommand{Op: tkCancel, ID: "r1"}, &ticketCommand{Op: tkCancel, ID: "r2"}
	roundOf(t, db, now, first)
	roundOf(t, db, now, again, failed)
	if refusedOf(first) != "" || first.Reservation.State != tickets.Cancelled || refusedOf(again) != "" || again.Reservation.State != tickets.Cancelled {
		t.Fatalf("cancel and its replay: %+v %+v", first, again)
	}
	if refusedOf(failed) == "" || failed.Reservation.State != tickets.Failed {
		t.Fatalf("cancelling a failed reservation: %+v", failed)
	}
	seats = &ticketCommand{Op: tkInspect, ID: key}
	s := roundOf(t, db, now, seats)
	if seats.Seats.Available != 3 || len(seats.Seats.Holders) != 0 || s.areas[key].seats.Free() != 3 {
		t.Fatalf("seat map after the cancel: %+v", seats.Seats)
	}
	missing := &ticketCommand{Op: tkInspect, ID: tickets.AreaKey("gig", "Z")}
	roundOf(t, db, now, missing)
	if missing.Seats != nil {
		t.Fatalf("an unknown area has a seat map: %+v", missing.Seats)
	}
}

// The first hold secret proposed is the cluster's, across loads.
func TestTicketOwnerKeepsTheFirstHoldSecret(t *testing.T) {
	db := openStore(t)
	first, second := &ticketCommand{Op: tkSecret, Secret: []byte("one")}, &ticketCommand{Op: tkSecret, Secret: []byte("two")}
	roundOf(t, db, time.Now(), first)
	roundOf(t, db, time.Now(), second)
	if string(first.Secret) != "one" || string(second.Secret) != "one" {
		t.Fatalf("secrets %q then %q, want the first twice", first.Secret, second.Secret)
	}
}

// refusedOf is why c's pay or cancel was refused, "" if it was not.
func refusedOf(c *ticketCommand) string {
	if c.Err == nil {
		return ""
	}
	return c.Err.Detail
}
