package ticketapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

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

// The fast reservation decoder is encoding/json with DisallowUnknownFields,
// never more lenient: what it accepts, encoding/json accepts with the same
// values. (It is stricter in one way: keys match case-sensitively.) An
// accepted request is of a known kind for the path's event, and the domain
// answers it without panicking.
func FuzzReservationBody(f *testing.F) {
	f.Add([]byte(`{"userId":"u","eventId":"ev","areaId":"A","numOfSeats":2,"type":"RANDOM"}`))
	f.Add([]byte(`{"userId":"u","areaId":"A","seats":[{"row":0,"col":1}],"type":"SELF_PICK"}`))
	f.Add([]byte(`{"userId":"u","eventId":"other","type":"RANDOM"}`))
	f.Add([]byte(`{"userId":"u","numOfSeats":"2","type":"RANDOM"}`))
	f.Add([]byte(`{"userId":"u","numOfSeats":2.5,"type":"RANDOM","seats":null,"numOfSeat":0}`))
	f.Add([]byte(`{"seats":[{"row":9223372036854775807,"col":-1}],"type":"SELF_PICK","userId":"u"}`))
	f.Add([]byte(`{"userId":"u","type":"RANDOM","userId":"v"} {}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, err := decodeReserve(body)
		if err != nil {
			return
		}
		var std reserveJSON
		if status := decodeBody(body, maxReservationBody, &std); status != 0 && utf8.Valid(body) {
			t.Fatalf("fast decoder accepted %q (%+v), encoding/json refused it", body, fast)
		}
		if utf8.Valid(body) && !reflect.DeepEqual(fast, std) && !(len(fast.Seats) == 0 && len(std.Seats) == 0) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", body, fast, std)
		}
		req, err := fast.request("ev")
		if err != nil {
			return
		}
		if req.EventID != "ev" || (req.Kind != tickets.Random && req.Kind != tickets.SelfPick) || fast.UserID == "" {
			t.Fatalf("accepted %+v from %s", req, body)
		}
		area := tickets.NewArea(2, 3)
		seats, reason, _ := area.Reserve(req)
		if (reason == "") != (len(seats) > 0) {
			t.Fatalf("Reserve(%+v) = %v, %q", req, seats, reason)
		}
	})
}

// The appended reservation reply is what encoding/json makes of it.
func TestReservationReplyMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 123456789, time.UTC)
	held := tickets.NewReservation("r-1", "u<&>\"\u2028", tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 2}, now)
	if err := held.Decide(now, time.Minute, []tickets.Seat{{Row: 0, Col: 1}, {Row: 0, Col: 2}}, "", ""); err != nil {
		t.Fatal(err)
	}
	paid := *held
	if err := paid.Pay(now, "pay-1"); err != nil {
		t.Fatal(err)
	}
	failed := tickets.NewReservation("r-2", "u", tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.SelfPick, Seats: []tickets.Seat{{Row: 9, Col: 9}}}, now)
	if err := failed.Decide(now, 0, nil, tickets.ReasonInvalidSeat, "(9, 9) is not a valid seat."); err != nil {
		t.Fatal(err)
	}
	undecided := tickets.NewReservation("r-3", "u", tickets.ReserveRequest{EventID: "ev", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1}, now)
	for _, r := range []*tickets.Reservation{held, &paid, failed, undecided} {
		want, err := json.Marshal(reservationOf(r))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendReservation(nil, r); !bytes.Equal(got, want) {
			t.Errorf("appended %s\nencoding/json %s", got, want)
		}
	}
}
