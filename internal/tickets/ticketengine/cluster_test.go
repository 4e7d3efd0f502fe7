package ticketengine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// The cluster's slices, round by round, each round on a fresh load of what
// the earlier ones wrote (as a new owner would), with every command
// carried through its wire encoding.

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

// wired is c through the wire: encoded, decoded, with c's reply address.
func wired(t *testing.T, c Command) Command {
	t.Helper()
	d, err := Decode(Encode(c))
	if err != nil {
		t.Fatal(err)
	}
	switch c := c.(type) {
	case *Reserve:
		SetReplyTo(d, c.from)
	case *Pay:
		SetReplyTo(d, c.from)
	case *Claim:
		SetReplyTo(d, c.from)
	}
	return d
}

// roundOf applies cmds to a fresh load of db's tickets, as an owner's
// round, writes the round's records back, and decodes each command's
// outcome into it.
func roundOf(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) *clusterShard {
	t.Helper()
	s, _ := roundOwing(t, db, now, cmds...)
	return s
}

// roundOwing is roundOf, returning also what the round owes other
// partitions and waiting nodes.
func roundOwing(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) (*clusterShard, []engine.Forward) {
	t.Helper()
	slices, err := clusterSlices(db, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := slices[0].(*clusterShard)
	applied := make([]engine.Command, len(cmds))
	for i, c := range cmds {
		applied[i] = c
		if c, ok := c.(Command); ok {
			applied[i] = wired(t, c)
		}
	}
	s.Apply(applied, now)
	b := db.NewBatch()
	s.Write(b)
	if err := db.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if c, ok := c.(Command); ok {
			if out := Outcome(applied[i]); out != nil {
				if err := DecodeOutcome(c, out); err != nil {
					t.Fatal(err)
				}
			} else {
				markDeferred(c)
			}
		}
	}
	owed := append([]engine.Forward(nil), s.Forwards(nil)...)
	s.Finish()
	return s, owed
}

// markDeferred notes that a later step of c's chain answers it.
func markDeferred(c Command) {
	switch c := c.(type) {
	case *Reserve:
		c.deferred = true
	case *Pay:
		c.deferred = true
	}
}

// chainRun is what a chain of ticket commands left: the answers to
// waiting nodes, by request id, and the payment debits owed to payers'
// partitions.
type chainRun struct {
	answers map[string][]byte
	debits  []*Debit
}

// runChain applies cmds at now, then the commands they owe, round after
// round, each round on a fresh load of db.
func runChain(t *testing.T, db *store.Store, now time.Time, cmds ...engine.Command) chainRun {
	t.Helper()
	run := chainRun{answers: map[string][]byte{}}
	for len(cmds) > 0 {
		_, owed := roundOwing(t, db, now, cmds...)
		cmds = nil
		for _, f := range owed {
			switch c := f.Cmd.(type) {
			case *ledgerengine.Reply:
				run.answers[string(c.To)] = c.Value
			case *Debit:
				d, err := DecodeDebit(c.Encode())
				if err != nil {
					t.Fatal(err)
				}
				run.debits = append(run.debits, d)
			case Command:
				cmds = append(cmds, c)
			}
		}
	}
	return run
}

// answer decodes the answer to request rid into c; false if there is none.
func (run chainRun) answer(t *testing.T, rid string, c Command) bool {
	t.Helper()
	b, ok := run.answers[rid]
	if ok {
		if err := DecodeOutcome(c, b); err != nil {
			t.Fatal(err)
		}
	}
	return ok
}

// gig creates event gig, with areas A and B of 2 rows of 5 seats at 10
// each, paid to org, holds of a minute, and a per-user limit.
func gig(t *testing.T, db *store.Store, now time.Time, limit int) {
	ev := tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Organizer: "org", PerUserSeatLimit: limit,
		Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 2, ColCount: 5}, {AreaID: "B", Price: 10, RowCount: 2, ColCount: 5}}}
	roundOf(t, db, now, &CreateArea{Spec: ev, Area: "A", Currency: "USD"}, &CreateArea{Spec: ev, Area: "B", Currency: "USD"})
}

// reserveAt is user's request for n seats of area, filed by a node
// waiting under request id rid.
func reserveAt(rid, user, area string, n int) *Reserve {
	return &Reserve{ID: "r-" + rid, User: user, from: []byte(rid),
		Req: tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n}}
}

// reserved runs a reservation's chain and returns its decision: the
// command's own outcome, or the chain's answer.
func reserved(t *testing.T, db *store.Store, now time.Time, c *Reserve) *tickets.Reservation {
	t.Helper()
	run := runChain(t, db, now, c)
	if c.deferred && !run.answer(t, string(c.from), c) || c.Reservation == nil {
		t.Fatalf("reservation %s: no answer", c.ID)
	}
	return c.Reservation
}

func heldBy(t *testing.T, db *store.Store, user string) int {
	t.Helper()
	s := roundOf(t, db, time.Now())
	if u := s.users[LimitKey("gig", user)]; u != nil {
		return u.Held
	}
	return 0
}

// refusedOf is why a pay or a cancel was refused, "" if it was not.
func refusedOf(e *ledger.Error) string {
	if e == nil {
		return ""
	}
	return e.Detail
}

// Every command and outcome comes back from the wire as it went.
func TestClusterCommandsSurviveTheWire(t *testing.T) {
	ev := tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Organizer: "org", PerUserSeatLimit: 4,
		ReservationOpeningTime: time.Unix(100, 0).UTC(), Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 2, ColCount: 5}}}
	r := &tickets.Reservation{ID: "r", UserID: "u", EventID: "gig", AreaID: "A", NumOfSeats: -3, Kind: tickets.SelfPick,
		Seats: []tickets.Seat{{Row: 1, Col: 2}}, State: tickets.Failed, FailedReason: tickets.ReasonInvalidArgument, Detail: "d",
		CreatedAt: time.Unix(5, 6).UTC(), UpdatedAt: time.Unix(7, 8).UTC(), PaymentID: "p"}
	req := tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.SelfPick, Seats: []tickets.Seat{{Row: 0, Col: 1}}}
	cmds := []Command{
		&CreateEvent{Spec: ev}, &CreateArea{Spec: ev, Area: "A", Currency: "USD"}, &ReadEvent{Name: "gig"},
		&AreaFree{Event: "gig", Area: "A"}, &Reserve{ID: "r", User: "u", Req: req, Verdict: Refused, Limit: 4, ReplyTo: []byte("0:x")},
		&ReadReservation{ID: "r"}, &Cancel{ID: "r"}, &Inspect{Event: "gig", Area: "A"}, &HoldSecret{Proposed: []byte{1, 2}},
		&Pay{ID: "r", Account: "a"}, &PayEnd{ID: "r", Attempt: 3, Ledger: []byte(`{}`)},
		&Claim{ID: "r", User: "u", Req: req, Limit: 4}, &Release{ID: "r", User: "u", Event: "gig"}, &Flush{},
	}
	for _, c := range cmds {
		if d := wired(t, c); !reflect.DeepEqual(d, c) {
			t.Fatalf("%T: sent %+v, decoded %+v", c, c, d)
		}
		if got, want := AppendEncode([]byte{'t'}, c), "t"+string(Encode(c)); string(got) != want {
			t.Fatalf("%T: appended after a workload byte %q, want %q", c, got, want)
		}
	}
	outs := []Command{
		&CreateEvent{Created: true, Conflict: true}, &ReadEvent{Spec: &ev}, &AreaFree{Found: true, Free: 3, SoldOutAt: time.Unix(9, 0).UTC()},
		&Reserve{Reservation: r, Limit: 4}, &Cancel{Reservation: r, Err: ledger.Errorf(tickets.CodeNotPayable, "no")},
		&Inspect{Seats: &tickets.AreaSeats{Spec: ev.Areas[0], Available: 2, SeatMap: []string{"x."}, Holders: []tickets.Reservation{*r}}},
		&HoldSecret{Secret: []byte("s")}, &Pay{Reservation: r, Fault: "f"},
	}
	for _, c := range outs {
		d := newCommand(c.Op())
		if err := DecodeOutcome(d, EncodeOutcome(c)); err != nil || !reflect.DeepEqual(d, c) {
			t.Fatalf("%T: outcome %+v, decoded %+v (%v)", c, c, d, err)
		}
	}
	if _, err := Decode([]byte{byte(OpReserve), 1}); err == nil {
		t.Fatal("a truncated command decoded")
	}
}

// An area's owner, loaded again from what its rounds wrote, never sells a
// held seat twice, and a hold that ran out gives its seats back.
func TestClusterOwnerKeepsSeatsAcrossLoads(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	ev := tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 2, ColCount: 2}}}
	roundOf(t, db, now, &CreateArea{Spec: ev, Area: "A"})
	reserve := func(i int) *Reserve {
		return &Reserve{ID: fmt.Sprint("r", i), User: "u", Req: tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1}}
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
	// A retried request (the same id) is answered with its first decision.
	retried := reserve(0)
	if roundOf(t, db, later, retried); retried.Reservation.State != tickets.Expired || held[retried.Reservation.Seats[0]] != "r0" {
		t.Fatalf("a retried request: %+v", retried.Reservation)
	}
}

// Cancelling on the area's owner gives the seats back and takes the
// reservation off the seat map's holders, across loads; a second cancel
// is a replay, and a reservation that holds no seats is refused.
func TestClusterOwnerCancelsAndShowsItsSeatMap(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	ev := tickets.EventSpec{EventName: "gig", Artist: "band", HoldTime: time.Minute, Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 3}}}
	reserve := func(id string, n int) *Reserve {
		return &Reserve{ID: id, User: "u", Req: tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: n}}
	}
	roundOf(t, db, now, &CreateArea{Spec: ev, Area: "A"}, reserve("r1", 2), reserve("r2", 2))
	seats := &Inspect{Event: "gig", Area: "A"}
	roundOf(t, db, now, seats)
	if seats.Seats == nil || seats.Seats.Available != 1 || len(seats.Seats.Holders) != 1 || seats.Seats.Holders[0].ID != "r1" {
		t.Fatalf("seat map before the cancel: %+v", seats.Seats)
	}
	first, again, failed := &Cancel{ID: "r1"}, &Cancel{ID: "r1"}, &Cancel{ID: "r2"}
	roundOf(t, db, now, first)
	roundOf(t, db, now, again, failed)
	if first.Err != nil || first.Reservation.State != tickets.Cancelled || again.Err != nil || again.Reservation.State != tickets.Cancelled {
		t.Fatalf("cancel and its replay: %+v %+v", first, again)
	}
	if failed.Err == nil || failed.Reservation.State != tickets.Failed {
		t.Fatalf("cancelling a failed reservation: %+v", failed)
	}
	seats = &Inspect{Event: "gig", Area: "A"}
	s := roundOf(t, db, now, seats)
	if seats.Seats.Available != 3 || len(seats.Seats.Holders) != 0 || s.areas[tickets.AreaKey("gig", "A")].seats.Free() != 3 {
		t.Fatalf("seat map after the cancel: %+v", seats.Seats)
	}
	missing := &Inspect{Event: "gig", Area: "Z"}
	roundOf(t, db, now, missing)
	if missing.Seats != nil {
		t.Fatalf("an unknown area has a seat map: %+v", missing.Seats)
	}
}

// The first hold secret proposed is the cluster's, across loads.
func TestClusterOwnerKeepsTheFirstHoldSecret(t *testing.T) {
	db := openStore(t)
	first, second := &HoldSecret{Proposed: []byte("one")}, &HoldSecret{Proposed: []byte("two")}
	roundOf(t, db, time.Now(), first)
	roundOf(t, db, time.Now(), second)
	if string(first.Secret) != "one" || string(second.Secret) != "one" {
		t.Fatalf("secrets %q then %q, want the first twice", first.Secret, second.Secret)
	}
}

// A user's seats across the areas of a limited event never pass the
// limit: a request that would is SEAT_LIMIT, and seats given back by a
// cancel, an expiry or a failed reservation count no more.
func TestClusterLimitCountsAUsersSeatsAcrossAreas(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	for _, c := range []*Reserve{reserveAt("1", "u", "A", 2), reserveAt("2", "u", "B", 2)} {
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
	if run := runChain(t, db, now, &Cancel{ID: "r-1"}); len(run.answers) != 0 {
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
func TestClusterLimitStepsCountOnce(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	req := tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 3}
	claim := func() *Claim { return &Claim{ID: "r-1", User: "u", Req: req, Limit: 4, ReplyTo: []byte("1")} }
	_, first := roundOwing(t, db, now, claim())
	_, again := roundOwing(t, db, now, claim())
	if first[0].Cmd.(*Reserve).Verdict != Granted || again[0].Cmd.(*Reserve).Verdict != Granted {
		t.Fatalf("claim and its replay: %+v %+v", first[0].Cmd, again[0].Cmd)
	}
	if n := heldBy(t, db, "u"); n != 3 {
		t.Fatalf("a claim applied twice holds %d, want 3", n)
	}
	release := &Release{ID: "r-1", User: "u", Event: "gig"}
	roundOf(t, db, now, release, release)
	if n := heldBy(t, db, "u"); n != 0 {
		t.Fatalf("a release applied twice holds %d, want 0", n)
	}
	_, other := roundOwing(t, db, now, &Claim{ID: "r-2", User: "u", Req: req, Limit: 4})
	if other[0].Cmd.(*Reserve).Verdict != Granted || heldBy(t, db, "u") != 3 {
		t.Fatalf("a claim after the release: %+v", other[0].Cmd)
	}
}

// payAt is a pay of reservation id from account u by a node waiting under
// request id rid.
func payAt(rid, id string) *Pay {
	return &Pay{ID: id, Account: "u", from: []byte(rid)}
}

// payEnd is the debit's outcome for d: made, or refused with err.
func payEnd(d *Debit, err *ledger.Error) *PayEnd {
	o := &ledgerengine.Transfer{}
	if err != nil {
		o.Err = err
	} else {
		o.Transfer = ledger.Transfer{ID: "pay"}
	}
	return d.End(ledgerengine.EncodeOutcome(o)).(*PayEnd)
}

// debitOf is the ledger's transfer command d carries.
func debitOf(t *testing.T, d *Debit) *ledgerengine.Transfer {
	t.Helper()
	cmd, err := ledgerengine.Decode(d.Transfer)
	w, ok := cmd.(*ledgerengine.Transfer)
	if err != nil || !ok {
		t.Fatalf("a debit's command %T: %v", cmd, err)
	}
	return w
}

// paidAnswer is the answer to pay request rid.
func paidAnswer(t *testing.T, run chainRun, rid string) *Pay {
	t.Helper()
	p := &Pay{}
	if !run.answer(t, rid, p) {
		return nil
	}
	return p
}

// A payment begun within the hold freezes it: a Tick past the hold does
// not expire it, a cancel is refused, a retried pay waits; the debit made
// after the hold's end still makes it PAID, every waiter hears so, and a
// pay after that is a replay.
func TestClusterPaymentBegunInTheHoldEndsPaid(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 0)
	r := reserved(t, db, now, reserveAt("1", "u", "A", 3))
	run := runChain(t, db, now, payAt("p1", r.ID))
	if len(run.answers) != 0 || len(run.debits) != 1 {
		t.Fatalf("pay began with %d answers and %d debits", len(run.answers), len(run.debits))
	}
	w := debitOf(t, run.debits[0])
	want := ledger.TransferRequest{ID: "pay-" + r.ID + "-00000001", From: "u", To: "org", Amount: 30, Memo: "reservation " + r.ID}
	if w.Req != want || w.Currency != "USD" {
		t.Fatalf("debit %+v %v, want %+v", w.Req, w.Currency, want)
	}
	late := r.HoldUntil.Add(time.Second)
	cancel := &Cancel{ID: r.ID}
	retry := runChain(t, db, late, engine.Tick{}, cancel, payAt("p2", r.ID))
	if len(retry.answers) != 0 || len(retry.debits) != 0 || !strings.Contains(refusedOf(cancel.Err), "being paid") {
		t.Fatalf("while paying: %+v, cancel %q", retry, refusedOf(cancel.Err))
	}
	end := runChain(t, db, late, payEnd(run.debits[0], nil))
	for _, rid := range []string{"p1", "p2"} {
		a := paidAnswer(t, end, rid)
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
	if again := runChain(t, db, late, payEnd(run.debits[0], nil)); len(again.answers) != 0 {
		t.Fatalf("a second outcome answered %v", again.answers)
	}
}

// A debit refused after the hold ran out expires the hold at once, with
// no money moved, and its claim goes back; one refused within the hold
// leaves it RESERVED, and the next attempt pays under a new id.
func TestClusterPaymentRefusedThawsTheHold(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	broke := ledger.Errorf(ledger.CodeInsufficientFunds, "account u has 0 available, needs 20")
	r1 := reserved(t, db, now, reserveAt("1", "u", "A", 2))
	r2 := reserved(t, db, now, reserveAt("2", "u", "B", 2))
	first := runChain(t, db, now, payAt("p1", r1.ID), payAt("p2", r2.ID))
	late := r1.HoldUntil.Add(time.Second)
	end := runChain(t, db, late, payEnd(first.debits[0], broke))
	if a := paidAnswer(t, end, "p1"); a == nil || a.Err == nil || a.Err.Code != ledger.CodeInsufficientFunds || a.Reservation.State != tickets.Expired {
		t.Fatalf("refused after the hold: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 2 {
		t.Fatalf("u holds %d after the expiry, want 2", n)
	}
	refused := payAt("p3", r1.ID)
	if run := runChain(t, db, late, refused); len(run.debits) != 0 || !strings.Contains(refusedOf(refused.Err), "expired") {
		t.Fatalf("paying an expired hold: %+v %q", run, refusedOf(refused.Err))
	}
	// r2: refused within its hold, then paid by a second attempt.
	if a := paidAnswer(t, runChain(t, db, now, payEnd(first.debits[1], broke)), "p2"); a == nil || a.Reservation.State != tickets.Reserved {
		t.Fatalf("refused within the hold: %+v", a)
	}
	second := runChain(t, db, now, payAt("p4", r2.ID))
	if len(second.debits) != 1 || debitOf(t, second.debits[0]).Req.ID != "pay-"+r2.ID+"-00000002" {
		t.Fatalf("second attempt: %+v", second.debits)
	}
	if a := paidAnswer(t, runChain(t, db, now, payEnd(second.debits[0], nil)), "p4"); a.Reservation.State != tickets.Paid {
		t.Fatalf("second attempt: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 2 {
		t.Fatalf("a paid reservation keeps its claim: u holds %d, want 2", n)
	}
}

// A hold that ran out before its pay arrived is refused with no debit,
// even before a Tick expired it; an event without an organizer takes no
// payments.
func TestClusterPaymentAfterTheHoldMovesNothing(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 0)
	r := reserved(t, db, now, reserveAt("1", "u", "A", 1))
	late := payAt("p1", r.ID)
	if run := runChain(t, db, r.HoldUntil, late); len(run.debits) != 0 || late.Err == nil || late.Reservation.State != tickets.Reserved {
		t.Fatalf("a pay at the hold's end: %+v %+v", run, late)
	}
	free := tickets.EventSpec{EventName: "free", Artist: "band", Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 1}}}
	roundOf(t, db, now, &CreateArea{Spec: free, Area: "A"})
	c := &Reserve{ID: "r-free", User: "u", Req: tickets.ReserveRequest{EventID: "free", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1}}
	roundOf(t, db, now, c)
	p := payAt("p2", "r-free")
	if run := runChain(t, db, now, p); len(run.debits) != 0 || !strings.Contains(refusedOf(p.Err), "takes no payments") {
		t.Fatalf("paying an event without an organizer: %+v %q", run, refusedOf(p.Err))
	}
}

// A claim sent straight by a node that knows the event's limit is
// answered to that node, with the limit; one for an area the event does
// not have fails as INVALID_EVENT_AREA and gives its claim back.
func TestClusterLimitTakesClaimsFromNodes(t *testing.T) {
	db := openStore(t)
	now := time.Now().UTC()
	gig(t, db, now, 4)
	direct := func(rid, area string) *Claim {
		return &Claim{ID: "r-" + rid, User: "u", Limit: 4, from: []byte(rid),
			Req: tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: 3}}
	}
	a := &Reserve{}
	if !runChain(t, db, now, direct("1", "A")).answer(t, "1", a) || a.Reservation.State != tickets.Reserved || a.Limit != 4 {
		t.Fatalf("a claim from a node: %+v", a)
	}
	a = &Reserve{}
	if !runChain(t, db, now, direct("2", "Z")).answer(t, "2", a) || a.Reservation.FailedReason != tickets.ReasonInvalidEventArea {
		t.Fatalf("a claim for an unknown area: %+v", a)
	}
	if n := heldBy(t, db, "u"); n != 3 {
		t.Fatalf("u holds %d, want 3: the unknown area's claim is given back", n)
	}
}
