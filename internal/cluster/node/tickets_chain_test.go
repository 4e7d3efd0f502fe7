package node

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// chainRun is what a chain of ticket commands left: the answers to
// waiting nodes, by request id, and the payment debits owed to payers'
// partitions.
type chainRun struct {
	answers map[string]*ticketCommand
	debits  []paymentDebit
}

// runChain applies cmds at now, then the ticket commands they owe, round
// after round, each round on a fresh load of db (as a new owner would).
func runChain(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) chainRun {
	t.Helper()
	run := chainRun{answers: map[string]*ticketCommand{}}
	for len(cmds) > 0 {
		_, owed := roundOwing(t, db, now, cmds...)
		cmds = nil
		for _, o := range owed {
			switch {
			case o.Kind == kafkalog.Reply:
				run.answers[string(o.Key)] = decodeTicket(t, append([]byte{workloadTickets}, o.Value...))
			case o.Value[0] == workloadPayment:
				var d paymentDebit
				if err := json.Unmarshal(o.Value[1:], &d); err != nil {
					t.Fatal(err)
				}
				run.debits = append(run.debits, d)
			default:
				cmds = append(cmds, decodeTicket(t, o.Value))
			}
		}
	}
	return run
}

func decodeTicket(t *testing.T, v []byte) *ticketCommand {
	t.Helper()
	c := &ticketCommand{}
	if v[0] != workloadTickets || json.Unmarshal(v[1:], c) != nil {
		t.Fatalf("not a ticket command: %q", v)
	}
	return c
}

// gig creates event gig, with areas A and B of 2 rows of 5 seats at 10
// each, paid to org, holds of a minute, and a per-user limit.
func gig(t *testing.T, db *store.Store, now time.Time, limit int) {
	ev := &tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Organizer: "org", PerUserSeatLimit: limit,
		Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 2, ColCount: 5}, {AreaID: "B", Price: 10, RowCount: 2, ColCount: 5}}}
	roundOf(t, db, now, &ticketCommand{Op: tkCreateArea, Event: ev, AreaID: "A", Currency: "USD"},
		&ticketCommand{Op: tkCreateArea, Event: ev, AreaID: "B", Currency: "USD"})
}

// reserveAt is user's request for n seats of area, filed by a node
// waiting under request id rid.
func reserveAt(rid, user, area string, n int) *ticketCommand {
	return &ticketCommand{Op: tkReserve, ID: "r-" + rid, User: user, from: &replyAddr{RID: rid},
		Req: &tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n}}
}

// reserved runs a reservation's chain and returns its decision: the
// command's own outcome, or the chain's answer.
func reserved(t *testing.T, db *store.Store, now time.Time, c *ticketCommand) *tickets.Reservation {
	t.Helper()
	a := runChain(t, db, now, c).answers[c.from.RID]
	if !c.deferred {
		a = c
	}
	if a == nil || a.Reservation == nil {
		t.Fatalf("reservation %s: no answer", c.ID)
	}
	return a.Reservation
}

func heldBy(t *testing.T, db *store.Store, user string) int {
	t.Helper()
	s := roundOf(t, db, time.Now())
	if u := s.users[limitKey("gig", user)]; u != nil {
		return u.Held
	}
	return 0
}

// A user's seats across the areas of a limited event never pass the
// limit: a request that would is SEAT_LIMIT, and seats given back by a
// cancel, an expiry or a failed reservation count no more.
func TestTicketLimitCountsAUsersSeatsAcrossAreas(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	for _, c := range []*ticketCommand{reserveAt("1", "u", "A", 2), reserveAt("2", "u", "B", 2)} {
		if r := reserved(t, db, now, c); r.State != tickets.Reserved {
			t.Fatalf("within the limit: %+v", r)
		}
	}
	over := reserved(t, db, now, reserveAt("3", "u", "A", 1))
	if over.State != tickets.Failed || over.FailedReason != tickets.ReasonSeatLimit || over.Detail != "at most 4 seats per user in event gig" {
		t.Fatalf("over the limit: %+v", over)
	}
	taken := reserved(t, db, now, reserveAt("4", "v", "A", 3))
	if taken.State != tickets.Reserved {
		t.Fatalf("another user: %+v", taken)
	}
	if n := heldBy(t, db, "u"); n != 4 {
		t.Fatalf("u holds %d, want 4", n)
	}
	// Cancelled: its 2 seats count no more, so 2 more fit.
	if run := runChain(t, db, now, &ticketCommand{Op: tkCancel, ID: "r-1"}); len(run.answers) != 0 {
		t.Fatalf("cancel answered through the chain: %+v", run.answers)
	}
	if n := heldBy(t, db, "u"); n != 2 {
		t.Fatalf("after the cancel u holds %d, want 2", n)
	}
	// A reservation that fails (picking a seat v holds) gives its claim
	// back.
	if r := reserved(t, db, now, reserveAt("5", "u", "A", 2)); r.State != tickets.Reserved {
		t.Fatalf("after the cancel: %+v", r)
	}
	pick := reserveAt("6", "w", "A", 0)
	pick.Req.Kind, pick.Req.Seats = tickets.SelfPick, taken.Seats[:1]
	if r := reserved(t, db, now, pick); r.State != tickets.Failed || r.FailedReason != tickets.ReasonNotAvailable {
		t.Fatalf("picking a held seat: %+v", r)
	}
	if n := heldBy(t, db, "w"); n != 0 {
		t.Fatalf("a failed reservation left %d seats claimed", n)
	}
	// Expired: every claim goes back.
	runChain(t, db, now.Add(2*time.Minute), engine.Tick{})
	for _, u := range []string{"u", "v"} {
		if n := heldBy(t, db, u); n != 0 {
			t.Fatalf("after the holds ran out %s holds %d", u, n)
		}
	}
}

// A claim or a release applied twice (a step delivered again) counts
// once.
func TestTicketLimitStepsCountOnce(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	req := &tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3}
	claim := func() *ticketCommand {
		return &ticketCommand{Op: tkClaim, ID: "r-1", User: "u", Req: req, Limit: 4, ReplyTo: &replyAddr{RID: "1"}}
	}
	_, first := roundOwing(t, db, now, claim())
	_, again := roundOwing(t, db, now, claim())
	if decodeTicket(t, first[0].Value).Claim != claimGranted || decodeTicket(t, again[0].Value).Claim != claimGranted {
		t.Fatalf("claim and its replay: %q %q", first[0].Value, again[0].Value)
	}
	if n := heldBy(t, db, "u"); n != 3 {
		t.Fatalf("a claim applied twice holds %d, want 3", n)
	}
	release := &ticketCommand{Op: tkRelease, ID: "r-1", User: "u", Req: &tickets.ReserveRequest{EventID: "gig"}}
	roundOf(t, db, now, release, release)
	if n := heldBy(t, db, "u"); n != 0 {
		t.Fatalf("a release applied twice holds %d, want 0", n)
	}
	_, other := roundOwing(t, db, now, &ticketCommand{Op: tkClaim, ID: "r-2", User: "u", Req: req, Limit: 4})
	if decodeTicket(t, other[0].Value).Claim != claimGranted || heldBy(t, db, "u") != 3 {
		t.Fatalf("a claim after the release: %q", other[0].Value)
	}
}

// payAt is a pay of reservation id from account u by a node waiting under
// request id rid.
func payAt(rid, id string) *ticketCommand {
	return &ticketCommand{Op: tkPay, ID: id, Account: "u", from: &replyAddr{RID: rid}}
}

// payEnd is the debit's outcome for d: made, or refused with err.
func payEnd(t *testing.T, d paymentDebit, err *ledger.Error) *ticketCommand {
	o := ledgerengine.WireOutcome{Err: err}
	if err == nil {
		o.Transfer = &ledger.Transfer{ID: "pay"}
	}
	v, _ := json.Marshal(&o)
	return &ticketCommand{Op: tkPayEnd, ID: d.ID, Attempt: d.Attempt, Ledger: v}
}

// A payment begun within the hold freezes it: a Tick past the hold does
// not expire it, a cancel is refused, a retried pay waits; the debit made
// after the hold's end still makes it PAID, every waiter hears so, and a
// pay after that is a replay.
func TestTicketPaymentBegunInTheHoldEndsPaid(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 0)
	r := reserved(t, db, now, reserveAt("1", "u", "A", 3))
	run := runChain(t, db, now, payAt("p1", r.ID))
	if len(run.answers) != 0 || len(run.debits) != 1 {
		t.Fatalf("pay began with %d answers and %d debits", len(run.answers), len(run.debits))
	}
	var w ledgerengine.WireCommand
	if err := json.Unmarshal(run.debits[0].Transfer, &w); err != nil {
		t.Fatal(err)
	}
	want := ledger.TransferRequest{ID: "pay-" + r.ID + "-00000001", From: "u", To: "org", Amount: 30, Memo: "reservation " + r.ID}
	if *w.Req != want || w.Currencies["org"] != "USD" {
		t.Fatalf("debit %+v %v, want %+v", *w.Req, w.Currencies, want)
	}
	late := r.HoldUntil.Add(time.Second)
	cancel := &ticketCommand{Op: tkCancel, ID: r.ID}
	retry := runChain(t, db, late, engine.Tick{}, cancel, payAt("p2", r.ID))
	if len(retry.answers) != 0 || len(retry.debits) != 0 || !strings.Contains(refusedOf(cancel), "being paid") {
		t.Fatalf("while paying: %+v, cancel %q", retry, refusedOf(cancel))
	}
	end := runChain(t, db, late, payEnd(t, run.debits[0], nil))
	for _, rid := range []string{"p1", "p2"} {
		a := end.answers[rid]
		if a == nil || a.Reservation.State != tickets.Paid || a.Reservation.PaymentID != want.ID || a.Err != nil {
			t.Fatalf("waiter %s: %+v", rid, a)
		}
	}
	replay := payAt("p3", r.ID)
	if run := runChain(t, db, late.Add(time.Hour), engine.Tick{}, replay); len(run.debits) != 0 || replay.Reservation.State != tickets.Paid {
		t.Fatalf("a pay after the payment: %+v %+v", run, replay.Reservation)
	}
	if s := roundOf(t, db, late); s.areas[tickets.AreaKey("gig", "A")].seats.Free() != 7 || len(s.pays) != 0 {
		t.Fatalf("paid: %d seats free, %d payments left", s.areas[tickets.AreaKey("gig", "A")].seats.Free(), len(s.pays))
	}
	// The same outcome delivered again changes nothing and answers nobody.
	if again := runChain(t, db, late, payEnd(t, run.debits[0], nil)); len(again.answers) != 0 {
		t.Fatalf("a second outcome answered %v", again.answers)
	}
}

// A debit refused after the hold ran out expires the hold at once, with
// no money moved, and its claim goes back; one refused within the hold
// leaves it RESERVED, and the next attempt pays under a new id.
func TestTicketPaymentRefusedUnfreezesTheHold(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	broke := ledger.Errorf(ledger.CodeInsufficientFunds, "account u has 0 available, needs 20")
	r1 := reserved(t, db, now, reserveAt("1", "u", "A", 2))
	r2 := reserved(t, db, now, reserveAt("2", "u", "B", 2))
	first := runChain(t, db, now, payAt("p1", r1.ID), payAt("p2", r2.ID))
	late := r1.HoldUntil.Add(time.Second)
	end := runChain(t, db, late, payEnd(t, first.debits[0], broke))
	if a := end.answers["p1"]; a == nil || a.Err == nil || a.Err.Code != ledger.CodeInsufficientFunds || a.Reservation.State != tickets.Expired {
		t.Fatalf("refused after the hold: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 2 {
		t.Fatalf("u holds %d after the expiry, want 2", n)
	}
	refused := payAt("p3", r1.ID)
	if run := runChain(t, db, late, refused); len(run.debits) != 0 || !strings.Contains(refusedOf(refused), "expired") {
		t.Fatalf("paying an expired hold: %+v %q", run, refusedOf(refused))
	}
	// r2: refused within its hold, then paid by a second attempt.
	if a := runChain(t, db, now, payEnd(t, first.debits[1], broke)).answers["p2"]; a == nil || a.Reservation.State != tickets.Reserved {
		t.Fatalf("refused within the hold: %+v", a)
	}
	second := runChain(t, db, now, payAt("p4", r2.ID))
	var w ledgerengine.WireCommand
	if len(second.debits) != 1 || json.Unmarshal(second.debits[0].Transfer, &w) != nil || w.Req.ID != "pay-"+r2.ID+"-00000002" {
		t.Fatalf("second attempt: %+v", second.debits)
	}
	if a := runChain(t, db, now, payEnd(t, second.debits[0], nil)).answers["p4"]; a.Reservation.State != tickets.Paid {
		t.Fatalf("second attempt: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 2 {
		t.Fatalf("a paid reservation keeps its claim: u holds %d, want 2", n)
	}
}

// A hold that ran out before its pay arrived is refused with no debit,
// even before a Tick expired it; an event without an organizer takes no
// payments.
func TestTicketPaymentAfterTheHoldMovesNothing(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 0)
	r := reserved(t, db, now, reserveAt("1", "u", "A", 1))
	late := payAt("p1", r.ID)
	if run := runChain(t, db, r.HoldUntil, late); len(run.debits) != 0 || refusedOf(late) == "" || late.Reservation.State != tickets.Reserved {
		t.Fatalf("a pay at the hold's end: %+v %+v", run, late)
	}
	free := &tickets.EventSpec{EventName: "free", Artist: "band", Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 1}}}
	roundOf(t, db, now, &ticketCommand{Op: tkCreateArea, Event: free, AreaID: "A"})
	c := &ticketCommand{Op: tkReserve, ID: "r-free", User: "u", Req: &tickets.ReserveRequest{EventID: "free", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1}}
	roundOf(t, db, now, c)
	p := payAt("p2", "r-free")
	if run := runChain(t, db, now, p); len(run.debits) != 0 || !strings.Contains(refusedOf(p), "takes no payments") {
		t.Fatalf("paying an event without an organizer: %+v %q", run, refusedOf(p))
	}
}

// A claim sent straight by a node that knows the event's limit is
// answered to that node, with the limit; one for an area the event does
// not have fails as INVALID_EVENT_AREA and gives its claim back.
func TestTicketLimitTakesClaimsFromNodes(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	direct := func(rid, area string) *ticketCommand {
		return &ticketCommand{Op: tkClaim, ID: "r-" + rid, User: "u", Limit: 4, from: &replyAddr{RID: rid},
			Req: &tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: 3}}
	}
	a := runChain(t, db, now, direct("1", "A")).answers["1"]
	if a == nil || a.Reservation.State != tickets.Reserved || a.Limit != 4 {
		t.Fatalf("a claim from a node: %+v", a)
	}
	a = runChain(t, db, now, direct("2", "Z")).answers["2"]
	if a == nil || a.Reservation.FailedReason != tickets.ReasonInvalidEventArea {
		t.Fatalf("a claim for an unknown area: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 3 {
		t.Fatalf("u holds %d, want 3: the unknown area's claim is given back", n)
	}
}
