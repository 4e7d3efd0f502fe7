package node

import (
	"cmp"
	"time"

	"github.com/surge-dev/surge/internal/tickets"
)

// Per-user seat limits in a cluster. A user's reservations in an event
// may be in several areas, so partitions; the seats the user holds in the
// event are counted in one partition, that of limitKey(event, user). A
// reservation in a limited event goes from its area's partition to its
// user's, which claims its seats (or refuses: SEAT_LIMIT) and sends it
// back to be decided; a reservation that fails, is cancelled or expires
// gives its claim back with a command to the user's partition, forwarded
// in the round that released its seats. A paid reservation keeps its
// claim, as on a single node. Every step commits with the one that sent
// it, so the count is exact whichever node dies: the claims of a user are
// the reservations of the event that hold seats, plus those on their way.

// Claim verdicts, carried back to the area's partition.
const (
	claimGranted = "granted"
	claimRefused = "refused"
)

// limitKey is the partitioning key of a user's seats in an event.
func limitKey(event, user string) string { return event + "\x00user\x00" + user }

// claim claims c's seats for its user unless that passes c.Limit
// (tickets.SeatClaims), and sends the reservation back to its area's
// partition with the verdict. A claim made already (a retried step) is
// granted again. The claim comes from the area's partition, or straight
// from a node that knows the event's limit (Tickets.Reserve).
func (s *ticketSlice) claim(c *ticketCommand) {
	key := limitKey(c.Req.EventID, c.User)
	u := s.users[key]
	if u == nil {
		u = &tickets.SeatClaims{}
	}
	verdict := claimGranted
	ev := &tickets.EventSpec{EventName: c.Req.EventID, PerUserSeatLimit: c.Limit}
	if reason, _ := u.Claim(ev, tickets.NewReservation(c.ID, c.User, *c.Req, time.Time{})); reason != "" {
		verdict = claimRefused
	} else {
		s.users[key] = u
		s.record(tkKey(tkUserPrefix, key), u)
	}
	s.forward(s.partitionOf(tickets.AreaKey(c.Req.EventID, c.Req.AreaID)), &ticketCommand{
		Op: tkReserve, ID: c.ID, User: c.User, Req: c.Req, Claim: verdict, Limit: c.Limit, ReplyTo: cmp.Or(c.ReplyTo, c.from),
	})
	c.deferred = true
}

// releaseClaim sends reservation r's claim back to its user's partition.
func (s *ticketSlice) releaseClaim(r *tickets.Reservation) {
	s.forward(s.partitionOf(limitKey(r.EventID, r.UserID)), &ticketCommand{
		Op: tkRelease, ID: r.ID, User: r.UserID, Req: &tickets.ReserveRequest{EventID: r.EventID},
	})
}

// unclaim gives reservation id's claim back to the user of key; a claim
// given back already is not counted twice.
func (s *ticketSlice) unclaim(id, key string) {
	u := s.users[key]
	if u == nil || !u.Release(id) {
		return
	}
	if u.Empty() {
		delete(s.users, key)
		s.forget(tkKey(tkUserPrefix, key))
		return
	}
	s.record(tkKey(tkUserPrefix, key), u)
}
