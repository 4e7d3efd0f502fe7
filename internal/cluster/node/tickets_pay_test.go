package node

import (
	"fmt"
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
)

// Paying reservations through rounds of which every one is aborted once
// (its owner dying before it commits, its commands read again) and with a
// pay retried mid-chain: each paid reservation is debited exactly once,
// each payer's refusal moves nothing, every request is answered once, and
// the balances and credits in flight sum to 0.
func TestPaymentIsExactlyOnceAcrossAbortedRounds(t *testing.T) {
	r := newRounds(t)
	for _, id := range []string{ledger.WorldID, "org", "u0", "u1", "u2", "u3"} {
		r.ledger(part(id), ledgerengine.WireCommand{Op: ledgerengine.OpCreateAccount, Spec: &ledger.AccountSpec{ID: id, Currency: "USD"}})
	}
	for i, fund := range []int64{100, 100, 100, 5} { // u3 cannot pay
		req := ledger.TransferRequest{ID: fmt.Sprint("fund", i), From: ledger.WorldID, To: fmt.Sprint("u", i), Amount: fund}
		r.ledger(part(ledger.WorldID), ledgerengine.WireCommand{Op: ledgerengine.OpTransfer, Req: &req, Currencies: map[string]string{req.To: "USD"}})
	}
	ev := &tickets.EventSpec{EventName: "gig", Artist: "band", Organizer: "org", PerUserSeatLimit: 3,
		Areas: []tickets.AreaSpec{{AreaID: "A", Price: 7, RowCount: 4, ColCount: 4}}}
	area := part(tickets.AreaKey("gig", "A"))
	r.send(area, workloadTickets, &ticketCommand{Op: tkCreateArea, Event: ev, AreaID: "A", Currency: "USD"})
	var ids []string
	rids := map[string]string{}
	for i := range 4 {
		id := reservationID(area, testShards)
		ids = append(ids, id)
		rids[id] = r.send(area, workloadTickets, &ticketCommand{Op: tkReserve, ID: id, User: fmt.Sprint("u", i),
			Req: &tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 2}})
	}
	r.settle(true)
	for _, id := range ids {
		var out ticketCommand
		if r.reply(rids[id], &out); out.Reservation == nil || out.Reservation.State != tickets.Reserved {
			t.Fatalf("reservation %s: %+v", id, out.Reservation)
		}
		rids[id] = r.send(area, workloadTickets, &ticketCommand{Op: tkPay, ID: id, Account: out.Reservation.UserID})
	}
	r.round(false)
	r.round(true) // the pays began; their debits wait
	retry := r.send(area, workloadTickets, &ticketCommand{Op: tkPay, ID: ids[0], Account: "u0"})
	r.settle(true)
	var sold int64
	for i, id := range ids {
		var out ticketCommand
		r.reply(rids[id], &out)
		res := out.Reservation
		switch {
		case i == 3 && (out.Err == nil || out.Err.Code != ledger.CodeInsufficientFunds || res.State != tickets.Reserved):
			t.Fatalf("paying without the funds: %+v", out)
		case i < 3 && (out.Err != nil || res.State != tickets.Paid || res.PaymentID != tickets.PaymentID(id, 1)):
			t.Fatalf("payment of %s: %+v %+v", id, out.Err, res)
		case i < 3:
			sold += 14
		}
	}
	var again ticketCommand
	if r.reply(retry, &again); again.Reservation.State != tickets.Paid || again.Reservation.PaymentID != tickets.PaymentID(ids[0], 1) {
		t.Fatalf("the retried pay: %+v", again.Reservation)
	}
	for i, want := range []int64{86, 86, 86, 5} {
		if got := r.balance(fmt.Sprint("u", i)); got != want {
			t.Fatalf("u%d has %d, want %d", i, got, want)
		}
	}
	if got := r.balance("org"); got != sold {
		t.Fatalf("the organizer has %d, want %d", got, sold)
	}
	var sum int64
	for p := range testShards {
		st := r.ledger(p, ledgerengine.WireCommand{Op: ledgerengine.OpStats}).Stats
		sum += st.Balances["USD"] + st.Credits.Sent["USD"] - st.Credits.Received["USD"]
	}
	if sum != 0 {
		t.Fatalf("balances and credits in flight sum to %d", sum)
	}
}
