package node

import (
	"regexp"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
)

// paymentSuffix matches the attempt part of a payment's id, which the
// single node draws at random and a cluster counts.
var paymentSuffix = regexp.MustCompile(`(pay-\(new id\))-[0-9a-f]{8}`)

// reservation notes a reservation's answer without its times.
func (s *transcript) reservation(what string, r tickets.Reservation, err error) {
	s.note("%s: %s %s user=%s seats=%d failed=%q payment=%s err=%s %v", what, r.ID, r.State, r.UserID, len(r.Seats), r.FailureText(), r.PaymentID, ledger.CodeOf(err), err)
}

// reserve files a reservation and notes its decision; it returns its id.
func (s *transcript) reserve(user, area string, n int) string {
	id, err := s.tickets.Reserve(user, tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n})
	if err != nil {
		s.note("reserve %s %s %d: err=%v", user, area, n, err)
		return ""
	}
	r, err := s.tickets.Reservation(s.ctx, id, 5*time.Second)
	s.reservation("reserve "+user+" "+area, r, err)
	return id
}

func (s *transcript) pay(id, account string) {
	r, err := s.tickets.PayReservation(s.ctx, id, account)
	s.reservation("pay from "+account, r, err)
}

func (s *transcript) cancel(id string) {
	r, err := s.tickets.CancelReservation(s.ctx, id)
	s.reservation("cancel", r, err)
}

// Ticketing with payments and a per-user seat limit, on a node over kfake,
// answers as the single process does: the same states, failures, error
// codes and details, payment ids (but for the attempt's part), balances,
// histories and totals.
func TestClusterTicketsAnswerAsOneNode(t *testing.T) {
	same(t, func(s *transcript) {
		open(s, 1000, "fan")
		open(s, 150, "poor")
		open(s, 0, "org")
		spec := tickets.EventSpec{EventName: "gig", Artist: "band", Organizer: "org", PerUserSeatLimit: 4, HoldTime: time.Hour,
			Areas: []tickets.AreaSpec{{AreaID: "A", Price: 100, RowCount: 2, ColCount: 4}, {AreaID: "B", RowCount: 1, ColCount: 4}}}
		for _, ev := range []tickets.EventSpec{spec, spec, {EventName: "gig", Artist: "other", Areas: spec.Areas}} {
			_, created, err := s.tickets.CreateEvent(s.ctx, ev)
			s.note("create event created=%v err=%s", created, ledger.CodeOf(err))
		}
		r1 := s.reserve("fan", "A", 2)
		r2 := s.reserve("fan", "B", 2)
		s.reserve("fan", "A", 1) // over the limit
		s.pay(r1, "fan")
		s.pay(r1, "fan") // a replay
		s.pay(r2, "fan") // free seats: no transfer
		s.cancel(r1)     // paid: no refunds
		r3 := s.reserve("poor", "A", 2)
		s.pay(r3, "poor") // 200 of 150
		s.pay(r3, "nobody")
		s.cancel(r3)
		s.pay(r3, "poor") // cancelled
		s.cancel(r3)      // a replay
		s.reserve("poor", "A", 4)
		s.reserve("fan", "A", 1) // still over: paid seats count
		s.pay("00000000-0000-4000-8000-000000000000", "fan")
		s.accounts("fan", "poor", "org")
	})
}
