package ticketapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/surge-dev/surge/internal/tickets"
)

func decodeBody(body []byte, limit int64, v any) int {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	return decode(httptest.NewRecorder(), r, limit, v)
}

// An event body either is refused with a status, or yields a spec that
// validates or not without panicking; a valid spec survives the trip
// through its JSON echo unchanged.
func FuzzEventBody(f *testing.F) {
	f.Add([]byte(`{"eventName":"ev","artist":"a","areas":[{"areaId":"A","price":10,"rowCount":2,"colCount":3}]}`))
	f.Add([]byte(`{"eventName":"ev","artist":"a","areas":[{"areaId":"A","rowCount":2,"colCount":3}],"reservationOpeningTime":"2026-01-01T00:00:00Z","reservationClosingTime":"2026-01-02T00:00:00Z","holdSeconds":30,"organizer":"org","perUserSeatLimit":4}`))
	f.Add([]byte(`{"eventName":"","areas":null}`))
	f.Add([]byte(`{"eventName":"ev","areas":[{"areaId":"A","rowCount":-1}]} trailing`))
	f.Add([]byte(`{"eventName":"ev","holdSeconds":1e99}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var j eventJSON
		if status := decodeBody(body, maxEventBody, &j); status != 0 {
			if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d", status)
			}
			return
		}
		spec := j.spec()
		if spec.Validate() != nil {
			return
		}
		echo, err := json.Marshal(eventOf(&spec))
		if err != nil {
			t.Fatal(err)
		}
		var back eventJSON
		if status := decodeBody(echo, maxEventBody, &back); status != 0 {
			t.Fatalf("echo %s does not decode: %d", echo, status)
		}
		again := back.spec()
		if !spec.SameAs(&again) {
			t.Fatalf("echo changed the event:\n%+v\n%+v", spec, again)
		}
	})
}

// A reservation body is refused with a status or becomes a request of a
// known kind for the path's event.
func FuzzReservationBody(f *testing.F) {
	f.Add([]byte(`{"userId":"u","eventId":"ev","areaId":"A","numOfSeats":2,"type":"RANDOM"}`))
	f.Add([]byte(`{"userId":"u","areaId":"A","seats":[{"row":0,"col":1}],"type":"SELF_PICK"}`))
	f.Add([]byte(`{"userId":"u","eventId":"other","type":"RANDOM"}`))
	f.Add([]byte(`{"userId":"u","numOfSeats":"2","type":"RANDOM"}`))
	f.Add([]byte(`{"seats":[{"row":9223372036854775807,"col":-1}],"type":"SELF_PICK","userId":"u"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var j reserveJSON
		if status := decodeBody(body, maxReservationBody, &j); status != 0 {
			return
		}
		req, err := j.request("ev")
		if err != nil {
			return
		}
		if req.EventID != "ev" || (req.Kind != tickets.Random && req.Kind != tickets.SelfPick) || j.UserID == "" {
			t.Fatalf("accepted %+v from %s", req, body)
		}
		// The domain must answer any accepted request without panicking.
		area := tickets.NewArea(2, 3)
		seats, reason, _ := area.Reserve(req)
		if (reason == "") != (len(seats) > 0) {
			t.Fatalf("Reserve(%+v) = %v, %q", req, seats, reason)
		}
	})
}
