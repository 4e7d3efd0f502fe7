package spike

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/bench/benchtest"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/tickets"
)

// fakeTickets is a small in-memory server speaking the ticketing HTTP
// contract, for the spike client's tests (the real server's e2e test is
// separate). Its faults are switches: doubleBook gives a block's seats to
// the next reservation too, flaky answers every other request 503 first.
type fakeTickets struct {
	doubleBook, flaky bool

	mu           sync.Mutex
	areas        map[string]*fakeArea // by "event/area"
	events       map[string][]string  // area ids by event
	soldOutAt    map[string]time.Time
	reservations map[string]*reservationJSON
	calls        int
	scrapes      int // of /metrics, each reporting another 0.25 s of CPU
}

type fakeArea struct {
	seats  *tickets.Area
	holder map[tickets.Seat]string
}

func newFakeTickets(t *testing.T, doubleBook, flaky bool) *httptest.Server {
	f := &fakeTickets{doubleBook: doubleBook, flaky: flaky, areas: map[string]*fakeArea{}, events: map[string][]string{},
		soldOutAt: map[string]time.Time{}, reservations: map[string]*reservationJSON{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		f.scrapes++
		cpu := 0.25 * float64(f.scrapes)
		f.mu.Unlock()
		fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 2.5e+07\nprocess_cpu_seconds_total %g\n", cpu)
	})
	mux.HandleFunc("POST /v1/event", f.createEvent)
	mux.HandleFunc("POST /v1/event/{event}/reservation", f.overloadable(f.reserve))
	mux.HandleFunc("GET /v1/reservation/{id}", f.overloadable(f.reservation))
	mux.HandleFunc("GET /v1/event/{event}", f.event)
	mux.HandleFunc("GET /v1/event/{event}/area/{area}", f.area)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeTickets) overloadable(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls++
		shed := f.flaky && f.calls%2 == 1
		f.mu.Unlock()
		if shed {
			w.Header().Set("Retry-After", "1")
			benchtest.Problem(w, http.StatusServiceUnavailable, "overloaded")
			return
		}
		h(w, r)
	}
}

func (f *fakeTickets) createEvent(w http.ResponseWriter, r *http.Request) {
	var ev struct {
		EventName string `json:"eventName"`
		Areas     []struct {
			AreaID   string `json:"areaId"`
			RowCount int    `json:"rowCount"`
			ColCount int    `json:"colCount"`
		} `json:"areas"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range ev.Areas {
		f.areas[ev.EventName+"/"+a.AreaID] = &fakeArea{seats: tickets.NewArea(a.RowCount, a.ColCount), holder: map[tickets.Seat]string{}}
		f.events[ev.EventName] = append(f.events[ev.EventName], a.AreaID)
	}
	w.WriteHeader(http.StatusOK)
}

func (f *fakeTickets) reserve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		EventID    string `json:"eventId"`
		AreaID     string `json:"areaId"`
		NumOfSeats int    `json:"numOfSeats"`
		Type       string `json:"type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := &reservationJSON{ReservationID: uuid.NewString(), EventID: req.EventID, AreaID: req.AreaID}
	f.reservations[res.ReservationID] = res
	area := f.areas[req.EventID+"/"+req.AreaID]
	seats, reason, detail := f.pick(area, tickets.ReserveRequest{EventID: req.EventID, AreaID: req.AreaID,
		Kind: tickets.Kind(req.Type), NumOfSeats: req.NumOfSeats})
	if reason != "" {
		res.State, res.FailedReason = "FAILED", fmt.Sprintf("[%s]: %s", reason, detail)
	} else {
		res.State = "RESERVED"
		for _, s := range seats {
			res.Seats = append(res.Seats, spikeSeat{s.Row, s.Col})
			area.holder[s] = res.ReservationID
		}
		f.noteSoldOut(req.EventID)
	}
	if r.URL.Query().Get("wait") != "" {
		benchtest.WriteJSON(w, http.StatusOK, res)
		return
	}
	fmt.Fprint(w, res.ReservationID)
}

// pick reserves like the real desk, or with doubleBook finds the best
// block without taking it, so that the next request gets it again.
func (f *fakeTickets) pick(area *fakeArea, req tickets.ReserveRequest) ([]tickets.Seat, tickets.Reason, string) {
	if area == nil {
		return nil, tickets.ReasonInvalidEventArea, "no such area"
	}
	if !f.doubleBook {
		return area.seats.Reserve(req)
	}
	if seats, ok := area.seats.PickBest(req.NumOfSeats); ok {
		return seats, "", ""
	}
	return nil, tickets.ReasonNotAvailable, "none"
}

func (f *fakeTickets) noteSoldOut(event string) {
	for _, id := range f.events[event] {
		if f.areas[event+"/"+id].seats.Free() > 0 {
			return
		}
	}
	f.soldOutAt[event] = time.Now()
}

func (f *fakeTickets) reservation(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, ok := f.reservations[r.PathValue("id")]
	if !ok {
		benchtest.Problem(w, http.StatusNotFound, "not_found")
		return
	}
	benchtest.WriteJSON(w, http.StatusOK, res)
}

func (f *fakeTickets) event(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := r.PathValue("event")
	type area struct {
		Sold int `json:"sold"`
	}
	out := struct {
		Areas     []area     `json:"areas"`
		SoldOutAt *time.Time `json:"soldOutAt,omitempty"`
	}{}
	for _, id := range f.events[name] {
		out.Areas = append(out.Areas, area{Sold: len(f.areas[name+"/"+id].holder)})
	}
	if at, ok := f.soldOutAt[name]; ok {
		out.SoldOutAt = &at
	}
	benchtest.WriteJSON(w, http.StatusOK, out)
}

func (f *fakeTickets) area(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.areas[r.PathValue("event")+"/"+r.PathValue("area")]
	if !ok {
		benchtest.Problem(w, http.StatusNotFound, "not_found")
		return
	}
	var got areaJSON
	got.RowCount, got.ColCount, got.SeatMap = a.seats.Rows(), a.seats.Cols(), a.seats.SeatMap()
	got.Available = a.seats.Free()
	for s, id := range a.holder {
		got.Taken = append(got.Taken, struct {
			Row           int    `json:"row"`
			Col           int    `json:"col"`
			ReservationID string `json:"reservationId"`
			State         string `json:"state"`
		}{s.Row, s.Col, id, "RESERVED"})
	}
	benchtest.WriteJSON(w, http.StatusOK, got)
}

// smallSpike is a spike on the fake: 2 events × 3 areas × 2×5 seats (60
// seats) and 200 requests from 8 workers, enough to sell out.
func smallSpike(target string) SpikeConfig {
	cfg := DefaultSpikeConfig()
	cfg.Target, cfg.VUs, cfg.Iterations, cfg.Seed = target, 8, 200, 1
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 2, 3, 2, 5
	return cfg
}

func TestRunSpikeSellsOutWithoutDoubleBooking(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Second} {
		for _, client := range []struct {
			kind     httpc.ClientKind
			pipeline int
		}{{httpc.FastClient, 0}, {httpc.StdClient, 0}, {httpc.FastClient, 4}} {
			t.Run(fmt.Sprintf("wait=%s/%s/pipeline=%d", wait, client.kind, client.pipeline), func(t *testing.T) {
				cfg := smallSpike(newFakeTickets(t, false, false).URL)
				cfg.Wait, cfg.Client, cfg.Pipeline = wait, client.kind, client.pipeline
				res, err := RunSpike(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Err(); err != nil {
					t.Fatalf("Err() = %v", err)
				}
				s := res.Spike
				if !s.SoldOut() || s.SeatsSold != 60 || s.ServerSeatsSold != 60 || s.SeatMaps.Taken != 60 || s.SeatMaps.Areas != 6 {
					t.Fatalf("sold %d (server %d, seat maps %d in %d areas) of %d", s.SeatsSold, s.ServerSeatsSold, s.SeatMaps.Taken, s.SeatMaps.Areas, s.Capacity)
				}
				var outcomes int64
				for _, n := range s.Reservations {
					outcomes += n
				}
				if outcomes != 200 || s.Reservations["FAILED NOT_AVAILABLE"] == 0 || res.Totals.Failed != 0 {
					t.Fatalf("reservations %v, %d failed requests; want 200 outcomes, some NOT_AVAILABLE", s.Reservations, res.Totals.Failed)
				}
				if s.LastSale == nil || s.ServerSoldOut == nil || s.ServerPeakRSS != 25_000_000 {
					t.Fatalf("last sale %v, server sold out %v, RSS %d", s.LastSale, s.ServerSoldOut, s.ServerPeakRSS)
				}
				// The CPU time is the last scrape's less the first's.
				if s.ServerCPU < 0.25 || s.ServerCPU != float64(int(s.ServerCPU*4))/4 {
					t.Fatalf("server CPU %g s; want a positive multiple of 0.25 s", s.ServerCPU)
				}
				if s.Processing.Max <= 0 || s.Processing.Max > res.Latency.Max {
					t.Fatalf("processing max %.3f ms, latency max %.3f ms", s.Processing.Max, res.Latency.Max)
				}
			})
		}
	}
}

func TestRunSpikeCatchesDoubleBooking(t *testing.T) {
	res, err := RunSpike(t.Context(), smallSpike(newFakeTickets(t, true, false).URL))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Spike
	if s.DoubleBookings == 0 || len(s.DoubleBookingExamples) == 0 || s.SeatMaps.DoubleBooked == 0 {
		t.Fatalf("double bookings %d (examples %v), seat maps %+v", s.DoubleBookings, s.DoubleBookingExamples, s.SeatMaps)
	}
	d := s.DoubleBookingExamples[0]
	if d.Reservations[0] == "" || d.Reservations[0] == d.Reservations[1] {
		t.Fatalf("example %v does not name two reservations", d)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "double bookings") {
		t.Fatalf("Err() = %v; want double bookings", err)
	}
	if res.Verdict.Pass {
		t.Fatal("a double-booking run passed its verdict")
	}
}

func TestRunSpikeRetriesOverload(t *testing.T) {
	cfg := smallSpike(newFakeTickets(t, false, true).URL)
	res, err := RunSpike(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Failed != 0 || res.Spike.Retries == 0 || !res.Spike.SoldOut() {
		t.Fatalf("%d failed, %d retries, sold out %v; want every request through after retries",
			res.Totals.Failed, res.Spike.Retries, res.Spike.SoldOut())
	}
	if res.Spike.Shed != res.Spike.Retries {
		t.Fatalf("%d shed of %d retries; every 503 of this server is overloaded", res.Spike.Shed, res.Spike.Retries)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRunSpikeGivesUpAfterRetries(t *testing.T) {
	cfg := smallSpike(newFakeTickets(t, false, true).URL)
	cfg.Retries = 0
	res, err := RunSpike(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Failed == 0 || res.Failures["503 overloaded"] != res.Totals.Failed {
		t.Fatalf("failures %v of %d; want only 503 overloaded", res.Failures, res.Totals.Failed)
	}
}
