package ticketengine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/tickets"
)

// The owner keeps a sold-out failure compactly, in the round that decided
// it and on every load after, and answers for it as for a reservation
// kept whole: its reads, a retried request, a pay and a cancel. Any other
// failure, and one whose id is not a UUID's own spelling, is kept whole;
// another spelling of a kept id finds nothing.
func TestClusterOwnerKeepsSoldOutFailuresCompactly(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	ev := tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Organizer: "org",
		Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 1, ColCount: 2}}}
	roundOf(t, db, now, &CreateArea{Spec: ev, Area: "A", Currency: "USD"})
	reserve := func(id, area string, n int) *Reserve {
		return &Reserve{ID: id, User: "fan", Req: tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n}}
	}
	soldOut, noArea, oddID := uuid.NewString(), uuid.NewString(), "r-1"
	decided := map[string]*Reserve{
		soldOut: reserve(soldOut, "A", 2), noArea: reserve(noArea, "Z", 1), oddID: reserve(oddID, "A", 2),
	}
	s := roundOf(t, db, now, reserve(uuid.NewString(), "A", 1), decided[soldOut], decided[noArea], decided[oddID])
	for id, c := range decided {
		if c.Reservation == nil || c.Reservation.State != tickets.Failed {
			t.Fatalf("%s: decided %+v", id, c.Reservation)
		}
	}
	for _, s := range []*clusterShard{s, roundOf(t, db, now)} { // the deciding round's, a load's
		if _, whole := s.resv[soldOut]; whole || len(s.soldOut) != 1 || s.soldOut[uuid.MustParse(soldOut)].n != 2 {
			t.Fatalf("the sold-out failure is not kept compactly: whole %v, %d compact", whole, len(s.soldOut))
		}
		if s.resv[noArea] == nil || s.resv[oddID] == nil {
			t.Fatal("a failure that is not sold out, or has an odd id, is not kept whole")
		}
	}
	for id, c := range decided {
		read, retried := &ReadReservation{ID: id}, reserve(id, "A", 1)
		pay, cancel := &Pay{ID: id, Account: "fan"}, &Cancel{ID: id}
		roundOf(t, db, now.Add(time.Second), read, retried, pay, cancel)
		for what, got := range map[string]*tickets.Reservation{"read": read.Reservation, "retried": retried.Reservation, "pay": pay.Reservation, "cancel": cancel.Reservation} {
			if !reflect.DeepEqual(got, c.Reservation) {
				t.Fatalf("%s of %s: %+v; decided %+v", what, id, got, c.Reservation)
			}
		}
		if refusedOf(pay.Err) == "" || refusedOf(cancel.Err) == "" {
			t.Fatalf("%s: pay refused %q, cancel refused %q", id, refusedOf(pay.Err), refusedOf(cancel.Err))
		}
	}
	for _, other := range []string{strings.ToUpper(soldOut), "urn:uuid:" + soldOut, strings.ReplaceAll(soldOut, "-", "")} {
		if read := (&ReadReservation{ID: other}); roundOf(t, db, now, read) != nil && read.Reservation != nil {
			t.Fatalf("%s found %+v", other, read.Reservation)
		}
	}
}
