package node

import (
	"fmt"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketcluster"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// Paying reservations through rounds of which every one is aborted once
// (its owner dying before it commits, its commands read again) and with a
// pay retried mid-chain: each paid reservation is debited exactly once,
// each payer's refusal moves nothing, every request is answered once, and
// the balances and credits in flight sum to 0.
func TestPaymentIsExactlyOnceAcrossAbortedRounds(t *testing.T) {
	r := newRounds(t)
	for _, id := range []string{ledger.WorldID, "org", "u0", "u1", "u2", "u3"} {
		ledgerCall(r, part(id), &ledgerengine.CreateAccount{Spec: ledger.AccountSpec{ID: id, Currency: "USD"}})
	}
	for i, fund := range []int64{100, 100, 100, 5} { // u3 cannot pay
		req := ledger.TransferRequest{ID: fmt.Sprint("fund", i), From: ledger.WorldID, To: fmt.Sprint("u", i), Amount: fund}
		ledgerCall(r, part(ledger.WorldID), &ledgerengine.Transfer{Req: req, Currency: "USD"})
	}
	ev := &tickets.EventSpec{EventName: "gig", Artist: "band", Organizer: "org", PerUserSeatLimit: 3,
		Areas: []tickets.AreaSpec{{AreaID: "A", Price: 7, RowCount: 4, ColCount: 4}}}
	area := part(tickets.AreaKey("gig", "A"))
	r.ticket(area, &ticketengine.CreateArea{Spec: *ev, Area: "A", Currency: "USD"})
	var ids []string
	rids := map[string]string{}
	for i := range 4 {
		id := ticketcluster.ReservationID(area, testShards)
		ids = append(ids, id)
		rids[id] = r.ticket(area, &ticketengine.Reserve{ID: id, User: fmt.Sprint("u", i),
			Req: tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 2}})
	}
	r.settle(true)
	for _, id := range ids {
		var out ticketengine.Reserve
		if r.ticketReply(rids[id], &out); out.Reservation == nil || out.Reservation.State != tickets.Reserved {
			t.Fatalf("reservation %s: %+v", id, out.Reservation)
		}
		rids[id] = r.ticket(area, &ticketengine.Pay{ID: id, Account: out.Reservation.UserID})
	}
	r.round(false)
	r.round(true) // the pays began; their debits wait
	retry := r.ticket(area, &ticketengine.Pay{ID: ids[0], Account: "u0"})
	r.settle(true)
	var sold int64
	for i, id := range ids {
		var out ticketengine.Pay
		r.ticketReply(rids[id], &out)
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
	var again ticketengine.Pay
	if r.ticketReply(retry, &again); again.Reservation.State != tickets.Paid || again.Reservation.PaymentID != tickets.PaymentID(ids[0], 1) {
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
		st := ledgerCall(r, p, &ledgerengine.Stats{}).Stats
		sum += st.Balances["USD"] + st.Credits.Sent["USD"] - st.Credits.Received["USD"]
	}
	if sum != 0 {
		t.Fatalf("balances and credits in flight sum to %d", sum)
	}
}

// ticket appends a client's ticketing command for partition and returns
// its request id.
func (r *rounds) ticket(partition int, c ticketengine.Command) string {
	r.seq++
	rid := fmt.Sprint("req", r.seq)
	v := append([]byte{calls.WorkloadTickets}, ticketengine.Encode(c)...)
	r.waiting = append(r.waiting, kafkalog.Command{Partition: int32(partition), Key: []byte("0:" + rid), Value: v})
	return rid
}

// ticketReply is request rid's only reply, decoded into out.
func (r *rounds) ticketReply(rid string, out ticketengine.Command) {
	r.t.Helper()
	if len(r.replies[rid]) != 1 {
		r.t.Fatalf("request %s has %d replies, want 1", rid, len(r.replies[rid]))
	}
	if err := ticketengine.DecodeOutcome(out, r.replies[rid][0]); err != nil {
		r.t.Fatal(err)
	}
}
