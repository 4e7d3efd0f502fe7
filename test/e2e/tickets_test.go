package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTicketLifecycle(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "2")
	c := srv.c
	for _, id := range []string{"org", "fan"} {
		if _, r, err := c.CreateAccount(NewAccount{ID: id, Currency: "USD"}); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("account %s: %v %v", id, r, err)
		}
	}
	if _, r, err := c.Transfer(TransferReq{From: "@world", To: "fan", Amount: 10_000}); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("funding: %v %v", r, err)
	}
	ev := Event{EventName: "gig", Artist: "band", HoldSeconds: 1, Organizer: "org", Areas: []EventArea{
		{AreaID: "floor", Price: 1500, RowCount: 2, ColCount: 5},
	}}
	echo := mustCreateEvent(t, c, ev)
	if echo.EventName != "gig" || len(echo.Areas) != 1 || echo.Areas[0].RowCount != 2 {
		t.Fatalf("echo: %+v", echo)
	}

	// RANDOM: the best block of the front row, centred.
	random := mustReserve(t, c, ReserveReq{UserID: "fan", EventID: "gig", AreaID: "floor", NumOfSeats: 3, Type: "RANDOM"})
	if random.State != "RESERVED" || !slices.Equal(random.Seats, []Seat{{0, 1}, {0, 2}, {0, 3}}) || random.NumOfSeat != 3 {
		t.Fatalf("random: %+v", random)
	}
	// SELF_PICK in one call, with ?wait and a JSON reply.
	var picked Reservation
	r, err := c.do(http.MethodPost, "/v1/event/gig/reservation?wait=10s",
		ReserveReq{UserID: "u2", EventID: "gig", AreaID: "floor", NumOfSeats: 2, Type: "SELF_PICK", Seats: []Seat{{1, 0}, {1, 1}}}, &picked)
	if err != nil || r.Status != http.StatusOK || picked.State != "RESERVED" || len(picked.Seats) != 2 {
		t.Fatalf("self pick: %v %+v %v", r, picked, err)
	}
	// A pick that overlaps a held seat takes nothing.
	clash := mustReserve(t, c, ReserveReq{UserID: "u3", EventID: "gig", AreaID: "floor", NumOfSeats: 2, Type: "SELF_PICK", Seats: []Seat{{1, 2}, {1, 1}}})
	if clash.State != "FAILED" || !strings.HasPrefix(clash.FailedReason, "[NOT_AVAILABLE]") {
		t.Fatalf("clash: %+v", clash)
	}
	areaSeats(t, c, "gig", "floor")
	if got := getEvent(t, c, "gig"); *got.Areas[0].Available != 5 || *got.Areas[0].Sold != 5 {
		t.Fatalf("availability: %+v", got.Areas[0])
	}

	// Pay the random one: 3 × 1500 from fan to org.
	var paid Reservation
	r, err = c.do(http.MethodPost, "/v1/reservation/"+random.ReservationID+"/pay", map[string]string{"account": "fan"}, &paid)
	if err != nil || r.Status != http.StatusOK || paid.State != "PAID" || paid.PaymentID == "" {
		t.Fatalf("pay: %v %+v %v", r, paid, err)
	}
	wantAccount(t, c, "fan", 10_000-4500)
	wantAccount(t, c, "org", 4500)

	// Cancel the picked one: its seats go back on sale.
	var cancelled Reservation
	r, err = c.do(http.MethodDelete, "/v1/reservation/"+picked.ReservationID, nil, &cancelled)
	if err != nil || r.Status != http.StatusOK || cancelled.State != "CANCELLED" {
		t.Fatalf("cancel: %v %+v %v", r, cancelled, err)
	}
	resold := mustReserve(t, c, ReserveReq{UserID: "fan", EventID: "gig", AreaID: "floor", NumOfSeats: 2, Type: "SELF_PICK", Seats: []Seat{{1, 0}, {1, 1}}})
	if resold.State != "RESERVED" {
		t.Fatalf("resale after cancel: %+v", resold)
	}

	// The resold hold is never paid: it expires after the event's hold
	// time and its seats are on sale again. (The clock is the subject.)
	poll(t, 15*time.Second, "hold expiry", func() (bool, string) {
		res, err := awaitReservation(c, resold.ReservationID)
		return err == nil && res.State == "EXPIRED", fmt.Sprintf("%+v %v", res, err)
	})
	if res, _ := awaitReservation(c, random.ReservationID); res.State != "PAID" {
		t.Fatalf("paid reservation after expiry sweep: %+v", res)
	}
	owner := areaSeats(t, c, "gig", "floor")
	if len(owner) != 3 {
		t.Fatalf("after expiry %d seats held, want the 3 paid", len(owner))
	}
	r, err = c.do(http.MethodPost, "/v1/reservation/"+resold.ReservationID+"/pay", map[string]string{"account": "fan"}, nil)
	if err != nil || r.Status != http.StatusConflict || r.Problem.Code != "reservation_not_held" {
		t.Fatalf("paying an expired hold: %v %v", r, err)
	}
	wantAccount(t, c, "fan", 10_000-4500)
}

func wantAccount(t testing.TB, c *Client, id string, balance int64) {
	t.Helper()
	a, r, err := c.Account(id)
	if err != nil || r.Status != http.StatusOK || a.Balance != balance || a.Pending != 0 {
		t.Fatalf("account %s: %+v %v %v, want balance %d, nothing pending", id, a, r, err, balance)
	}
}

func TestTicketBadInput(t *testing.T) {
	srv := start(t, t.TempDir())
	c := srv.c
	mustCreateEvent(t, c, Event{EventName: "ev", Artist: "a", Areas: []EventArea{{AreaID: "A", RowCount: 2, ColCount: 3}}})
	mustReserve(t, c, ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 1, Type: "RANDOM"})

	refused := []struct {
		name, path, body string
		status           int
	}{
		{"malformed JSON", "/v1/event/ev/reservation", `{"userId":`, 400},
		{"unknown type", "/v1/event/ev/reservation", `{"userId":"u","eventId":"ev","areaId":"A","numOfSeats":1,"type":"BEST"}`, 400},
		{"wrong type", "/v1/event/ev/reservation", `{"userId":"u","eventId":"ev","areaId":"A","numOfSeats":"1","type":"RANDOM"}`, 400},
		{"unknown field", "/v1/event/ev/reservation", `{"userId":"u","eventId":"ev","areaId":"A","numOfSeats":1,"type":"RANDOM","vip":true}`, 400},
		{"event mismatch", "/v1/event/ev/reservation", `{"userId":"u","eventId":"other","areaId":"A","numOfSeats":1,"type":"RANDOM"}`, 400},
		{"no user", "/v1/event/ev/reservation", `{"eventId":"ev","areaId":"A","numOfSeats":1,"type":"RANDOM"}`, 400},
		{"oversized body", "/v1/event/ev/reservation", `{"userId":"` + strings.Repeat("u", 20000) + `"}`, 413},
		{"duplicate event, other areas", "/v1/event", `{"eventName":"ev","artist":"a","areas":[{"areaId":"B","rowCount":1,"colCount":1}]}`, 409},
		{"event without areas", "/v1/event", `{"eventName":"ev2","artist":"a","areas":[]}`, 400},
		{"area too large", "/v1/event", `{"eventName":"ev3","artist":"a","areas":[{"areaId":"A","rowCount":100000,"colCount":1}]}`, 400},
		{"bad event name", "/v1/event", `{"eventName":"a b","artist":"a","areas":[{"areaId":"A","rowCount":1,"colCount":1}]}`, 400},
		{"negative price", "/v1/event", `{"eventName":"ev4","artist":"a","areas":[{"areaId":"A","price":-1,"rowCount":1,"colCount":1}]}`, 400},
	}
	for _, tc := range refused {
		r, err := c.raw(http.MethodPost, tc.path, "application/json", []byte(tc.body))
		if err != nil || r.Status != tc.status || r.Header.Get("Content-Type") != "application/problem+json" || r.Problem.Code == "" {
			t.Errorf("%s: %v %v, want %d problem", tc.name, r, err, tc.status)
		}
	}
	// ticket-master reports these as failed reservations, with its codes.
	failed := []struct {
		name   string
		req    ReserveReq
		reason string
	}{
		{"unknown area", ReserveReq{UserID: "u", EventID: "ev", AreaID: "Z", NumOfSeats: 1, Type: "RANDOM"}, "[INVALID_EVENT_AREA]"},
		{"unknown event", ReserveReq{UserID: "u", EventID: "nope", AreaID: "A", NumOfSeats: 1, Type: "RANDOM"}, "[INVALID_EVENT_AREA]"},
		{"zero seats", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 0, Type: "RANDOM"}, "[INVALID_ARGUMENT]"},
		{"negative seats", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: -2, Type: "RANDOM"}, "[INVALID_ARGUMENT]"},
		{"huge numOfSeats", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 1 << 30, Type: "RANDOM"}, "[INVALID_ARGUMENT]"},
		{"seat out of range", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 1, Type: "SELF_PICK", Seats: []Seat{{5, 0}}}, "[INVALID_SEAT]"},
		{"repeated seat", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 2, Type: "SELF_PICK", Seats: []Seat{{1, 1}, {1, 1}}}, "[INVALID_SEAT]"},
		{"more than a row", ReserveReq{UserID: "u", EventID: "ev", AreaID: "A", NumOfSeats: 4, Type: "RANDOM"}, "[NOT_AVAILABLE]"},
	}
	for _, tc := range failed {
		res := mustReserve(t, c, tc.req)
		if res.State != "FAILED" || !strings.HasPrefix(res.FailedReason, tc.reason) {
			t.Errorf("%s: %+v, want FAILED %s", tc.name, res, tc.reason)
		}
	}
	if r, err := c.do(http.MethodGet, "/v1/reservation/not-a-uuid", nil, nil); err != nil || r.Status != http.StatusNotFound {
		t.Errorf("unknown reservation: %v %v", r, err)
	}
	// Nothing changed: one seat taken, the event as created.
	if owner := areaSeats(t, c, "ev", "A"); len(owner) != 1 {
		t.Fatalf("bad input changed the seat map: %v", owner)
	}
	if ev := getEvent(t, c, "ev"); len(ev.Areas) != 1 || ev.Areas[0].AreaID != "A" {
		t.Fatalf("bad input changed the event: %+v", ev)
	}
}

// spike fires reservations from workers until stop says so; every reply
// decided RESERVED goes to reserved.
type spike struct {
	c       *Client
	event   string
	areas   int
	workers int
	limit   int64 // requests in all
	onDone  func(int64)

	mu       sync.Mutex
	reserved []Reservation
	failures []string // answers outside the contract
	done     atomic.Int64
}

func (s *spike) run() {
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; sent.Add(1) <= s.limit; i++ {
				req := ReserveReq{UserID: fmt.Sprint("w", w), EventID: s.event, AreaID: fmt.Sprint("A", (w+i)%s.areas), NumOfSeats: 1 + (w+i)%4, Type: "RANDOM"}
				if !s.one(req) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// one makes one reservation; false once the server is gone.
func (s *spike) one(req ReserveReq) bool {
	id, r, err := reserve(s.c, req)
	if err != nil {
		return false
	}
	if id == "" {
		if r.Status != http.StatusServiceUnavailable {
			s.fail(r.String())
		}
		return true
	}
	res, err := awaitReservation(s.c, id)
	if err != nil {
		return false
	}
	if res.State == "RESERVED" {
		s.mu.Lock()
		s.reserved = append(s.reserved, res)
		s.mu.Unlock()
	} else if res.State != "FAILED" {
		s.fail(fmt.Sprintf("%+v", res))
	}
	if n := s.done.Add(1); s.onDone != nil {
		s.onDone(n)
	}
	return true
}

func (s *spike) fail(what string) {
	s.mu.Lock()
	s.failures = append(s.failures, what)
	s.mu.Unlock()
}

// wantHeld checks, after the load, that every RESERVED answer still holds
// its seats, no seat is held twice, and each area's count matches its map.
func wantHeld(t *testing.T, c *Client, event string, areas int, reserved []Reservation) int {
	t.Helper()
	owners := make(map[string]map[Seat]string)
	held := 0
	ev := getEvent(t, c, event)
	for a := range areas {
		area := fmt.Sprint("A", a)
		owners[area] = areaSeats(t, c, event, area)
		held += len(owners[area])
		spec := ev.Areas[a]
		if free := spec.RowCount*spec.ColCount - len(owners[area]); *spec.Available != free {
			t.Fatalf("area %s: the event says %d available, its seat map %d", area, *spec.Available, free)
		}
	}
	for _, res := range reserved {
		for _, s := range res.Seats {
			if got := owners[res.AreaID][s]; got != res.ReservationID {
				t.Fatalf("seat %v of %s: answered RESERVED to %s, now held by %q", s, res.AreaID, res.ReservationID, got)
			}
		}
		if now, err := awaitReservation(c, res.ReservationID); err != nil || now.State != "RESERVED" || !slices.Equal(now.Seats, res.Seats) {
			t.Fatalf("reservation %s answered %+v, now %+v %v", res.ReservationID, res, now, err)
		}
	}
	return held
}

// Many clients over few seats: exactly the capacity sold, no seat twice,
// every reservation decided.
func TestTicketSpikeSellsExactlyTheCapacity(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "2")
	const areas, rows, cols = 6, 4, 5
	mustCreateEvent(t, srv.c, Event{EventName: "spike", Artist: "a", Areas: spikeAreas(areas, rows, cols)})
	s := &spike{c: srv.c, event: "spike", areas: areas, workers: 48, limit: 1500}
	s.run()
	for _, f := range s.failures {
		t.Errorf("answer outside the contract: %s", f)
	}
	if s.done.Load() != s.limit {
		t.Fatalf("%d of %d requests decided", s.done.Load(), s.limit)
	}
	// Single seats sweep up what the blocks left; then every area is full.
	for a := range areas {
		for {
			res := mustReserve(t, srv.c, ReserveReq{UserID: "sweep", EventID: "spike", AreaID: fmt.Sprint("A", a), NumOfSeats: 1, Type: "RANDOM"})
			if res.State != "RESERVED" {
				break
			}
			s.reserved = append(s.reserved, res)
		}
	}
	if held := wantHeld(t, srv.c, "spike", areas, s.reserved); held != areas*rows*cols {
		t.Fatalf("%d seats held, capacity %d", held, areas*rows*cols)
	}
	if ev := getEvent(t, srv.c, "spike"); ev.SoldOutAt == "" {
		t.Fatalf("sold-out event without soldOutAt: %+v", ev)
	}
}

func spikeAreas(n, rows, cols int) []EventArea {
	var out []EventArea
	for i := range n {
		out = append(out, EventArea{AreaID: fmt.Sprint("A", i), RowCount: rows, ColCount: cols})
	}
	return out
}

// kill -9 during a spike, three times: every reservation answered RESERVED
// before a kill still holds its seats, and no seat is in two reservations.
func TestTicketCrashDuringSpike(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	srv := start(t, dir, "--shards", "2")
	const areas, rows, cols = 8, 10, 10
	mustCreateEvent(t, srv.c, Event{EventName: "crash", Artist: "a", Areas: spikeAreas(areas, rows, cols)})
	var reserved []Reservation
	for round := range 3 {
		s := &spike{c: srv.c, event: "crash", areas: areas, workers: 32, limit: 100_000}
		killAt := int64(50 + rng.IntN(150))
		untilKill(t, srv, killAt, func(onAck func(int64)) {
			s.onDone = onAck
			s.run()
		})
		for _, f := range s.failures {
			t.Errorf("round %d: answer outside the contract: %s", round, f)
		}
		reserved = append(reserved, s.reserved...)
		t.Logf("round %d: killed after %d decisions, %d RESERVED so far", round, killAt, len(reserved))
		srv = start(t, dir, "--shards", "2")
		wantHeld(t, srv.c, "crash", areas, reserved)
	}
}
