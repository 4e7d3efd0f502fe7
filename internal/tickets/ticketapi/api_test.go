package ticketapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/tickets"
	"github.com/valyala/fasthttp"
)

// queuedBox files every reservation and never decides one, as a server
// whose shards are busy.
type queuedBox struct{ Box }

func (queuedBox) Reserve(string, tickets.ReserveRequest) (string, error) {
	return "8c4d3bd4-1a8b-4b0e-9a53-0d2e2f3c8d11", nil
}

func (queuedBox) Reservation(_ context.Context, id string, _ time.Duration) (tickets.Reservation, error) {
	return tickets.Reservation{ID: id, State: tickets.Processing}, nil
}

// postReservation serves a reservation POST with the given query and
// Accept header and decodes the JSON reply.
func postReservation(t *testing.T, a *API, query, accept, body string) reservationJSON {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(http.MethodPost)
	ctx.Request.SetRequestURI("/v1/event/ev/reservation" + query)
	ctx.Request.Header.Set("Accept", accept)
	ctx.Request.SetBodyString(body)
	ctx.SetUserValue("id", "ev")
	if code := a.reserve(&ctx); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, ctx.Response.Body())
	}
	var got reservationJSON
	if err := json.Unmarshal(ctx.Response.Body(), &got); err != nil {
		t.Fatalf("%v: %s", err, ctx.Response.Body())
	}
	return got
}

// A reservation POST asking for JSON answers the whole request as filed
// while it is undecided, not a record with only its id and state.
func TestUndecidedReservationReplyIsWhole(t *testing.T) {
	a := New(queuedBox{}, Options{})
	for _, query := range []string{"", "?wait=0s"} {
		got := postReservation(t, a, query, "application/json",
			`{"userId":"u1","eventId":"ev","areaId":"A","numOfSeats":2,"type":"RANDOM"}`)
		want := reservationJSON{ReservationID: "8c4d3bd4-1a8b-4b0e-9a53-0d2e2f3c8d11", UserID: "u1", EventID: "ev", AreaID: "A",
			NumOfSeats: 2, Type: tickets.Random, Seats: []tickets.Seat{}, State: tickets.Processing}
		if got.ReservationID != want.ReservationID || got.UserID != want.UserID || got.EventID != want.EventID ||
			got.AreaID != want.AreaID || got.NumOfSeats != want.NumOfSeats || got.Type != want.Type || got.State != want.State {
			t.Errorf("query %q: got %+v\nwant %+v", query, got, want)
		}
	}
}

// A malformed time in an event says how to write one, not Go's layout.
func TestBadTimeSaysHowToWriteOne(t *testing.T) {
	for _, v := range []string{`"yesterday"`, `"2026-13-01T00:00:00Z"`, `5`, `"2026-12-01 10:00"`} {
		w := httptest.NewRecorder()
		body := `{"eventName":"ev","artist":"a","areas":[{"areaId":"A","rowCount":1,"colCount":1}],"reservationOpeningTime":` + v + `}`
		var j eventJSON
		if status := decode(w, httptest.NewRequest(http.MethodPost, "/v1/event", strings.NewReader(body)), maxEventBody, &j); status != http.StatusBadRequest {
			t.Fatalf("%s: status %d", v, status)
		}
		var p problemJSON
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.Detail, "2006") || !strings.Contains(p.Detail, "time") {
			t.Errorf("%s: detail %q", v, p.Detail)
		}
	}
}
