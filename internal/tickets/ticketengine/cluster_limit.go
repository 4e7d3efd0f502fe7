package ticketengine

import (
	"time"

	"github.com/surge-dev/surge/internal/tickets"
)

// Per-user seat limits in a cluster. A user's reservations in an event
// may be in several areas, so partitions; the seats the user holds in the
// event are counted (tickets.SeatClaims) in one partition, that of
// LimitKey(event, user). A reservation in a limited event goes from its
// area's partition to its user's, which claims its seats (or refuses:
// SEAT_LIMIT) and sends it back to be decided; a reservation that fails,
// is cancelled or expires gives its claim back with a command to the
// user's partition, forwarded in the round that released its seats. A
// paid reservation keeps its claim, as on a single node. Every step
// commits with the one that sent it, so the count is exact whichever node
// dies: the claims of a user are the reservations of the event that hold
// seats, plus those on their way.

// LimitKey is the partitioning key of a user's seats in an event.
func LimitKey(event, user string) string { return event + "\x00user\x00" + user }

// reserveLimited decides a reservation. In an event with a per-user seat
// limit, a reservation a node filed here goes first to its user's
// partition, which claims its seats and sends it back with the verdict
// (claim); the area's owner then decides it, answers the node (with the
// limit, which the node keeps), and gives the claim back if the
// reservation failed.
func (s *clusterShard) reserveLimited(c *Reserve, now time.Time) {
	a := s.areas[tickets.AreaKey(c.Req.EventID, c.Req.AreaID)]
	_, known := s.desk.Decided(c.ID)
	if a != nil && a.event.PerUserSeatLimit > 0 && c.Verdict == Unclaimed && !known {
		s.forward(s.partitionOf(LimitKey(c.Req.EventID, c.User)), &Claim{
			ID: c.ID, User: c.User, Req: c.Req, Limit: a.event.PerUserSeatLimit, ReplyTo: c.from,
		})
		c.deferred = true
		return
	}
	r := s.reserve(c.ID, c.User, c.Req, now, c.Verdict == Refused)
	cp := *r
	c.Reservation = &cp
	if a != nil && a.event.PerUserSeatLimit > 0 {
		c.Limit = a.event.PerUserSeatLimit
	}
	if c.Verdict == Granted && !known && !r.HoldsSeats() {
		s.releaseClaim(r) // an unknown area's too: its claim came from the node
	}
	if c.Verdict != Unclaimed {
		s.answer(c.ReplyTo, c)
	}
}

// claim claims c's seats for its user unless that passes c.Limit, and
// sends the reservation back to its area's partition with the verdict. A
// claim made already (a retried step) is granted again. The claim comes
// from the area's partition, or straight from a node that knows the
// event's limit (the node's Tickets.Reserve).
func (s *clusterShard) claim(c *Claim) {
	key := LimitKey(c.Req.EventID, c.User)
	u := s.users[key]
	if u == nil {
		u = &tickets.SeatClaims{}
	}
	verdict := Granted
	ev := &tickets.EventSpec{EventName: c.Req.EventID, PerUserSeatLimit: c.Limit}
	if reason, _ := u.Claim(ev, tickets.NewReservation(c.ID, c.User, c.Req, time.Time{})); reason != "" {
		verdict = Refused
	} else {
		s.users[key] = u
		s.record(tkKey(tkUserPrefix, key), encodeClaims(u))
	}
	replyTo := c.ReplyTo // from the area's partition
	if replyTo == nil {
		replyTo = c.from // from a node
	}
	s.forward(s.partitionOf(tickets.AreaKey(c.Req.EventID, c.Req.AreaID)), &Reserve{
		ID: c.ID, User: c.User, Req: c.Req, Verdict: verdict, Limit: c.Limit, ReplyTo: replyTo,
	})
}

// releaseClaim sends reservation r's claim back to its user's partition.
func (s *clusterShard) releaseClaim(r *tickets.Reservation) {
	s.forward(s.partitionOf(LimitKey(r.EventID, r.UserID)), &Release{ID: r.ID, User: r.UserID, Event: r.EventID})
}

// unclaim gives reservation id's claim back to the user of key; a claim
// given back already is not counted twice.
func (s *clusterShard) unclaim(id, key string) {
	u := s.users[key]
	if u == nil || !u.Release(id) {
		return
	}
	if u.Empty() {
		delete(s.users, key)
		s.forget(tkKey(tkUserPrefix, key))
		return
	}
	s.record(tkKey(tkUserPrefix, key), encodeClaims(u))
}
