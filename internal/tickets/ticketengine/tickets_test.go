package ticketengine

import (
	"fmt"
	"github.com/google/uuid"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
)

func testEvent(name string, areas, rows, cols int) tickets.EventSpec {
	spec := tickets.EventSpec{EventName: name, Artist: "test"}
	for i := range areas {
		spec.Areas = append(spec.Areas, tickets.AreaSpec{AreaID: fmt.Sprint("A", i), Price: 250, RowCount: rows, ColCount: cols})
	}
	return spec
}

func mustCreateEvent(t testing.TB, e *fixture, spec tickets.EventSpec) {
	t.Helper()
	if _, created, err := e.CreateEvent(ctx, spec); err != nil || !created {
		t.Fatalf("CreateEvent(%s): created %v, %v", spec.EventName, created, err)
	}
}

// reserveWait files a request and waits for its decision.
func reserveWait(t testing.TB, e *fixture, user string, req tickets.ReserveRequest) tickets.Reservation {
	t.Helper()
	id, err := e.Reserve(user, req)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	r, err := e.Reservation(ctx, id, time.Minute)
	if err != nil || !r.Final() {
		t.Fatalf("Reservation(%s): %+v, %v", id, r, err)
	}
	return r
}

func random(event, area string, n int) tickets.ReserveRequest {
	return tickets.ReserveRequest{EventID: event, AreaID: area, Kind: tickets.Random, NumOfSeats: n}
}

// checkArea asserts that an area's seat map, holders and published count
// agree, and returns the holders by seat.
func checkArea(t testing.TB, e *fixture, event, area string) map[tickets.Seat]string {
	t.Helper()
	seats, err := e.InspectArea(ctx, event, area)
	if err != nil {
		t.Fatal(err)
	}
	owner := make(map[tickets.Seat]string)
	for _, r := range seats.Holders {
		if !r.HoldsSeats() {
			t.Fatalf("holder %s is %s", r.ID, r.State)
		}
		for _, s := range r.Seats {
			if other, dup := owner[s]; dup {
				t.Fatalf("seat %v held by %s and %s", s, other, r.ID)
			}
			owner[s] = r.ID
		}
	}
	taken := 0
	for row, line := range seats.SeatMap {
		for col, c := range line {
			_, held := owner[tickets.Seat{Row: row, Col: col}]
			if (c == 'x') != held {
				t.Fatalf("seat (%d, %d) is %q in the map, held %v", row, col, c, held)
			}
			if c == 'x' {
				taken++
			}
		}
	}
	total := seats.Spec.RowCount * seats.Spec.ColCount
	if seats.Available != total-taken {
		t.Fatalf("available %d, map shows %d of %d taken", seats.Available, taken, total)
	}
	st, err := e.Event(event)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Areas {
		if a.Spec.AreaID == area && a.Available != seats.Available {
			t.Fatalf("published available %d, shard says %d", a.Available, seats.Available)
		}
	}
	return owner
}

func TestReserveBestBlockAndRead(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	mustCreateEvent(t, e, testEvent("ev", 1, 3, 5))

	r := reserveWait(t, e, "u1", random("ev", "A0", 3))
	want := []tickets.Seat{{Row: 0, Col: 1}, {Row: 0, Col: 2}, {Row: 0, Col: 3}}
	if r.State != tickets.Reserved || !slices.Equal(r.Seats, want) {
		t.Fatalf("got %+v, want RESERVED %v", r, want)
	}
	owner := checkArea(t, e, "ev", "A0")
	if len(owner) != 3 || owner[want[0]] != r.ID {
		t.Fatalf("holders %v", owner)
	}
	bad := reserveWait(t, e, "u1", random("ev", "nope", 1))
	if bad.State != tickets.Failed || bad.FailedReason != tickets.ReasonInvalidEventArea {
		t.Fatalf("unknown area: %+v", bad)
	}
	huge := reserveWait(t, e, "u1", random("ev", "A0", 1_000_000))
	if huge.State != tickets.Failed || huge.FailedReason != tickets.ReasonInvalidArgument {
		t.Fatalf("huge numOfSeats: %+v", huge)
	}
	if _, err := e.Reservation(ctx, "8c4d3bd4-1a8b-4b0e-9a53-0d2e2f3c8d11", 0); ledger.CodeOf(err) != tickets.CodeReservationNotFound {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestCreateEventReplayAndConflict(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	spec := testEvent("ev", 2, 2, 2)
	mustCreateEvent(t, e, spec)
	if _, created, err := e.CreateEvent(ctx, spec); err != nil || created {
		t.Fatalf("replay: created %v, %v", created, err)
	}
	other := testEvent("ev", 3, 2, 2)
	if _, _, err := e.CreateEvent(ctx, other); ledger.CodeOf(err) != tickets.CodeEventExists {
		t.Fatalf("conflict: %v", err)
	}
	if st, _ := e.Event("ev"); len(st.Areas) != 2 {
		t.Fatalf("conflicting create changed the event: %+v", st)
	}
}

// Many clients race for few seats: exactly the capacity is sold, no seat
// twice, and every reservation is decided.
func TestConcurrentReservationsSellExactlyTheCapacity(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	const areas, rows, cols = 4, 3, 4
	mustCreateEvent(t, e, testEvent("ev", areas, rows, cols))

	var (
		mu      sync.Mutex
		results []tickets.Reservation
		wg      sync.WaitGroup
	)
	record := func(r tickets.Reservation) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 20 {
				record(reserveWait(t, e, fmt.Sprint("u", w), random("ev", fmt.Sprint("A", rng.IntN(areas)), 1+rng.IntN(4))))
			}
		}()
	}
	wg.Wait()
	// Single seats sweep up what the random blocks left.
	for a := range areas {
		for {
			r := reserveWait(t, e, "sweeper", random("ev", fmt.Sprint("A", a), 1))
			record(r)
			if r.State == tickets.Failed {
				break
			}
		}
	}

	sold := make(map[string]map[tickets.Seat]string)
	for _, r := range results {
		if r.State == tickets.Failed {
			if r.FailedReason != tickets.ReasonNotAvailable {
				t.Fatalf("unexpected failure %+v", r)
			}
			continue
		}
		if r.State != tickets.Reserved || len(r.Seats) != r.NumOfSeats {
			t.Fatalf("reservation %+v", r)
		}
		if sold[r.AreaID] == nil {
			sold[r.AreaID] = make(map[tickets.Seat]string)
		}
		for _, s := range r.Seats {
			if other, dup := sold[r.AreaID][s]; dup {
				t.Fatalf("seat %v of %s sold to %s and %s", s, r.AreaID, other, r.ID)
			}
			sold[r.AreaID][s] = r.ID
		}
	}
	for a := range areas {
		area := fmt.Sprint("A", a)
		if len(sold[area]) != rows*cols {
			t.Fatalf("area %s: %d seats sold, capacity %d", area, len(sold[area]), rows*cols)
		}
		owner := checkArea(t, e, "ev", area)
		for s, id := range sold[area] {
			if owner[s] != id {
				t.Fatalf("seat %v: replies say %s, the seat map %s", s, id, owner[s])
			}
		}
	}
	st, _ := e.Event("ev")
	if st.SoldOutAt.IsZero() {
		t.Fatalf("sold out event has no soldOutAt: %+v", st)
	}
}

func TestReservationsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, testConfig{Dir: dir, Shards: 2})
	mustCreateEvent(t, e, testEvent("ev", 3, 4, 4))
	var kept []tickets.Reservation
	for i := range 9 {
		kept = append(kept, reserveWait(t, e, "u", random("ev", fmt.Sprint("A", i%3), 1+i%4)))
	}
	cancelled, err := e.CancelReservation(ctx, kept[0].ID)
	if err != nil || cancelled.State != tickets.Cancelled {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	kept[0] = cancelled
	closeEngine(t, e)

	e = openEngine(t, testConfig{Dir: dir, Shards: 3}) // areas move between shards
	for _, want := range kept {
		got, err := e.Reservation(ctx, want.ID, 0)
		if err != nil || got.State != want.State || !slices.Equal(got.Seats, want.Seats) {
			t.Fatalf("after reopen %+v %v, want %+v", got, err, want)
		}
	}
	for a := range 3 {
		owner := checkArea(t, e, "ev", fmt.Sprint("A", a))
		for _, r := range kept[1:] {
			if r.AreaID == fmt.Sprint("A", a) && owner[r.Seats[0]] != r.ID {
				t.Fatalf("seat %v of %s lost its holder %s", r.Seats[0], r.AreaID, r.ID)
			}
		}
	}
	// The cancelled seats are on sale again.
	again := reserveWait(t, e, "u", random("ev", kept[0].AreaID, kept[0].NumOfSeats))
	if again.State != tickets.Reserved {
		t.Fatalf("resale: %+v", again)
	}
}

func TestHoldExpiresAndSeatsGoBackOnSale(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	spec := testEvent("ev", 1, 1, 2)
	spec.HoldTime = 100 * time.Millisecond
	mustCreateEvent(t, e, spec)
	r := reserveWait(t, e, "u", random("ev", "A0", 2))
	if r.State != tickets.Reserved {
		t.Fatalf("%+v", r)
	}
	if sold := reserveWait(t, e, "u", random("ev", "A0", 1)); sold.State != tickets.Failed {
		t.Fatalf("sold out area sold again: %+v", sold)
	}
	waitFor(t, "hold expiry", func() bool {
		got, err := e.Reservation(ctx, r.ID, 0)
		return err == nil && got.State == tickets.Expired
	})
	checkArea(t, e, "ev", "A0")
	if _, err := e.PayReservation(ctx, r.ID, "buyer"); ledger.CodeOf(err) != tickets.CodeNotPayable {
		t.Fatalf("paying an expired hold: %v", err)
	}
	if resold := reserveWait(t, e, "u", random("ev", "A0", 2)); resold.State != tickets.Reserved {
		t.Fatalf("expired seats not back on sale: %+v", resold)
	}
}

// sellingEvent creates event "ev" (one area of 2×5 seats at 250) paying
// account "org", and a "buyer" holding 1000.
func sellingEvent(t testing.TB, e *fixture) {
	t.Helper()
	mustOpenAccount(t, e, "org")
	mustOpenAccount(t, e, "buyer")
	mustTransfer(t, e, ledger.TransferRequest{From: ledger.WorldID, To: "buyer", Amount: 1000})
	spec := testEvent("ev", 1, 2, 5)
	spec.Organizer = "org"
	mustCreateEvent(t, e, spec)
}

func TestPayMovesMoneyOnce(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	sellingEvent(t, e)
	mustOpenAccount(t, e, "poor")

	r := reserveWait(t, e, "u", random("ev", "A0", 3))
	if _, err := e.PayReservation(ctx, r.ID, "poor"); ledger.CodeOf(err) != ledger.CodeInsufficientFunds {
		t.Fatalf("pay without funds: %v", err)
	}
	paid, err := e.PayReservation(ctx, r.ID, "buyer")
	if err != nil || paid.State != tickets.Paid || !strings.HasPrefix(paid.PaymentID, "pay-"+r.ID) {
		t.Fatalf("pay: %+v %v", paid, err)
	}
	wantBalance(t, e, "buyer", 1000-750, 0)
	wantBalance(t, e, "org", 750, 0)
	wantBalance(t, e, "poor", 0, 0)
	again, err := e.PayReservation(ctx, r.ID, "buyer")
	if err != nil || again.PaymentID != paid.PaymentID {
		t.Fatalf("second pay: %+v %v", again, err)
	}
	wantBalance(t, e, "buyer", 250, 0)
	if _, err := e.CancelReservation(ctx, r.ID); ledger.CodeOf(err) != tickets.CodeNotPayable {
		t.Fatalf("cancelling a paid reservation: %v", err)
	}
	wantBalanced(t, e)
}

// A crash between the steps of a payment leaves a pending transfer; the
// next start posts it if the reservation is paid by it, else voids it.
func TestPaymentsSettledOnReopen(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, testConfig{Dir: dir, Shards: 2})
	sellingEvent(t, e)
	paid := reserveWait(t, e, "u", random("ev", "A0", 1))
	unpaid := reserveWait(t, e, "u", random("ev", "A0", 1))

	// As if the server died after these steps of PayReservation.
	pending := func(r tickets.Reservation) string {
		id := newPaymentID(r.ID)
		mustTransfer(t, e, ledger.TransferRequest{ID: id, From: "buyer", To: "org", Amount: 250, Pending: true})
		return id
	}
	paidBy := pending(paid)
	a, _ := e.area("ev", "A0")
	if err := e.Tickets.do(ctx, a.shard, &cmdPay{id: paid.ID, paymentID: paidBy}); err != nil {
		t.Fatal(err)
	}
	abandoned := pending(unpaid)
	wantBalance(t, e, "buyer", 1000, 500)
	closeEngine(t, e)

	e = openEngine(t, testConfig{Dir: dir, Shards: 2})
	for id, want := range map[string]ledger.TransferState{paidBy: ledger.StatePosted, abandoned: ledger.StateVoided} {
		if got, err := e.led.GetTransfer(ctx, id); err != nil || got.State != want {
			t.Fatalf("payment %s: %+v %v, want %v", id, got, err, want)
		}
	}
	wantBalance(t, e, "buyer", 750, 0)
	wantBalance(t, e, "org", 250, 0)
}

func TestPerUserSeatLimit(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	spec := testEvent("ev", 2, 5, 5)
	spec.PerUserSeatLimit = 4
	mustCreateEvent(t, e, spec)
	first := reserveWait(t, e, "alice", random("ev", "A0", 3))
	over := reserveWait(t, e, "alice", random("ev", "A1", 2))
	if first.State != tickets.Reserved || over.State != tickets.Failed || over.FailedReason != tickets.ReasonSeatLimit {
		t.Fatalf("limit: %+v / %+v", first, over)
	}
	if bob := reserveWait(t, e, "bob", random("ev", "A1", 4)); bob.State != tickets.Reserved {
		t.Fatalf("another user: %+v", bob)
	}
	// A failed request gives its claim back; a cancelled one its seats.
	if full := reserveWait(t, e, "alice", random("ev", "A0", 1)); full.State != tickets.Reserved {
		t.Fatalf("within the limit: %+v", full)
	}
	if _, err := e.CancelReservation(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if again := reserveWait(t, e, "alice", random("ev", "A1", 3)); again.State != tickets.Reserved {
		t.Fatalf("after cancel: %+v", again)
	}
}

func TestReserveOverloadedFilesNothing(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 1, QueueCapacity: 1})
	mustCreateEvent(t, e, testEvent("ev", 1, 2, 2))
	release := parkEngine(t, e)
	first, err := e.Reserve("u", random("ev", "A0", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Reserve("u", random("ev", "A0", 1))
	if ledger.CodeOf(err) != ledger.CodeOverloaded {
		t.Fatalf("full queue: %v", err)
	}
	release()
	if r, err := e.Reservation(ctx, first, time.Minute); err != nil || r.State != tickets.Reserved {
		t.Fatalf("queued request: %+v %v", r, err)
	}
	if owner := checkArea(t, e, "ev", "A0"); len(owner) != 1 {
		t.Fatalf("refused request took seats: %v", owner)
	}
	if e.ParkedPolls() != 0 {
		t.Fatalf("parked polls left: %d", e.ParkedPolls())
	}
	if r, err := e.CancelReservation(ctx, first); err != nil || r.State != tickets.Cancelled {
		t.Fatalf("cancel: %+v %v", r, err)
	}
}

// Paying or cancelling a reservation that failed for an unknown event or
// area answers reservation_not_held; it must not crash the caller.
func TestPayOrCancelOfUnknownEventFailureIsRefused(t *testing.T) {
	e := openEngine(t, testConfig{Dir: t.TempDir(), Shards: 2})
	mustCreateEvent(t, e, testEvent("ev", 1, 1, 1))
	for _, req := range []tickets.ReserveRequest{random("no-such-event", "A0", 1), random("ev", "no-such-area", 1)} {
		r := reserveWait(t, e, "u1", req)
		if r.State != tickets.Failed {
			t.Fatalf("%+v: %+v", req, r)
		}
		if _, err := e.PayReservation(ctx, r.ID, "u1"); ledger.CodeOf(err) != tickets.CodeNotPayable {
			t.Errorf("pay of %s: %v", r.FailedReason, err)
		}
		if _, err := e.CancelReservation(ctx, r.ID); ledger.CodeOf(err) != tickets.CodeNotPayable {
			t.Errorf("cancel of %s: %v", r.FailedReason, err)
		}
	}
}

// Failures decided at the edge, with no round to follow them, are still
// forgotten once their retention has passed: the first one kept asks the
// engine for a Tick.
func TestFailuresForgottenAfterRetention(t *testing.T) {
	e := openEngineWith(t, testConfig{Dir: t.TempDir(), Shards: 2}, Config{OutcomeRetention: 20 * time.Millisecond})
	r := reserveWait(t, e, "u1", random("no-such-event", "A0", 1))
	if r.State != tickets.Failed {
		t.Fatalf("%+v", r)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := e.Reservation(ctx, r.ID, 0)
		if ledger.CodeOf(err) == tickets.CodeReservationNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failure still kept a minute after a 20 ms retention: %v", err)
		}
		time.Sleep(time.Millisecond) // polls a condition; the deadline only bounds the wait
	}
	if n, _ := e.index.retained(); n != 0 {
		t.Fatalf("%d failures kept", n)
	}
}

// A cancelled reservation leaves memory after its retention and is then
// read from storage, as it is after a restart.
func TestSettledReservationsReadFromStorage(t *testing.T) {
	dir := t.TempDir()
	e := openEngineWith(t, testConfig{Dir: dir, Shards: 2}, Config{OutcomeRetention: 20 * time.Millisecond})
	mustCreateEvent(t, e, testEvent("ev", 1, 1, 2))
	r := reserveWait(t, e, "u1", random("ev", "A0", 1))
	if _, err := e.CancelReservation(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for n, _ := e.index.retained(); n != 0; n, _ = e.index.retained() {
		if time.Now().After(deadline) {
			t.Fatalf("%d settled reservations kept a minute after a 20 ms retention", n)
		}
		time.Sleep(time.Millisecond) // polls a condition; the deadline only bounds the wait
	}
	if got, err := e.Reservation(ctx, r.ID, 0); err != nil || got.State != tickets.Cancelled || got.UserID != "u1" {
		t.Fatalf("after leaving memory: %+v %v", got, err)
	}
	closeEngine(t, e)
	e = openEngine(t, testConfig{Dir: dir, Shards: 2})
	id := uuid.MustParse(r.ID)
	if n, _ := e.index.retained(); n != 0 || e.index.stripe(id).m[id].res != nil {
		t.Errorf("the cancelled reservation loaded into memory at start (%d kept)", n)
	}
	if got, err := e.Reservation(ctx, r.ID, 0); err != nil || got.State != tickets.Cancelled {
		t.Fatalf("after a restart: %+v %v", got, err)
	}
}
