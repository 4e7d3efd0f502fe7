package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
)

// The ticketing API's JSON, as a client sees it (docs/API.md).

type Event struct {
	EventName              string      `json:"eventName"`
	Artist                 string      `json:"artist"`
	Areas                  []EventArea `json:"areas"`
	ReservationOpeningTime string      `json:"reservationOpeningTime,omitempty"`
	ReservationClosingTime string      `json:"reservationClosingTime,omitempty"`
	HoldSeconds            int         `json:"holdSeconds,omitempty"`
	Organizer              string      `json:"organizer,omitempty"`
	PerUserSeatLimit       int         `json:"perUserSeatLimit,omitempty"`
	SoldOutAt              string      `json:"soldOutAt,omitempty"`
}

type EventArea struct {
	AreaID    string `json:"areaId"`
	Price     int64  `json:"price"`
	RowCount  int    `json:"rowCount"`
	ColCount  int    `json:"colCount"`
	Available *int   `json:"available,omitempty"`
	Sold      *int   `json:"sold,omitempty"`
}

type Seat struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

type ReserveReq struct {
	UserID     string `json:"userId"`
	EventID    string `json:"eventId"`
	AreaID     string `json:"areaId"`
	NumOfSeats int    `json:"numOfSeats"`
	Seats      []Seat `json:"seats,omitempty"`
	Type       string `json:"type"`
}

type Reservation struct {
	ReservationID string `json:"reservationId"`
	UserID        string `json:"userId"`
	EventID       string `json:"eventId"`
	AreaID        string `json:"areaId"`
	NumOfSeats    int    `json:"numOfSeats"`
	NumOfSeat     int    `json:"numOfSeat"`
	Type          string `json:"type"`
	Seats         []Seat `json:"seats"`
	State         string `json:"state"`
	FailedReason  string `json:"failedReason"`
	HoldUntil     string `json:"holdUntil,omitempty"`
	PaymentID     string `json:"paymentId,omitempty"`
}

type AreaSeats struct {
	AreaID    string   `json:"areaId"`
	RowCount  int      `json:"rowCount"`
	ColCount  int      `json:"colCount"`
	Available int      `json:"available"`
	SeatMap   []string `json:"seatMap"`
	Taken     []struct {
		Row           int    `json:"row"`
		Col           int    `json:"col"`
		ReservationID string `json:"reservationId"`
		State         string `json:"state"`
	} `json:"taken"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func mustCreateEvent(t testing.TB, c *Client, ev Event) Event {
	t.Helper()
	var got Event
	r, err := c.do(http.MethodPost, "/v1/event", ev, &got)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("create event: %v %v", r, err)
	}
	return got
}

// reserve posts a reservation the way ticket-master's client does and
// returns the bare id from the text/plain body, or the response when the
// server refused it.
func reserve(c *Client, req ReserveReq) (string, *Response, error) {
	r, err := c.do(http.MethodPost, "/v1/event/"+req.EventID+"/reservation", req, nil)
	if err != nil || r.Status != http.StatusOK {
		return "", r, err
	}
	id := string(r.Body)
	if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || !uuidRE.MatchString(id) {
		return "", r, fmt.Errorf("reservation reply %q (%s): want a bare UUID as text/plain", id, ct)
	}
	return id, r, nil
}

// awaitReservation long-polls until the reservation is decided, retrying
// on 503 as ticket-master's client does.
func awaitReservation(c *Client, id string) (Reservation, error) {
	for {
		var res Reservation
		r, err := c.do(http.MethodGet, "/v1/reservation/"+id, nil, &res)
		switch {
		case err != nil:
			return res, err
		case r.Status == http.StatusServiceUnavailable:
			continue
		case r.Status != http.StatusOK:
			return res, fmt.Errorf("GET reservation: %s", r)
		}
		return res, nil
	}
}

func mustReserve(t testing.TB, c *Client, req ReserveReq) Reservation {
	t.Helper()
	id, r, err := reserve(c, req)
	if err != nil || id == "" {
		t.Fatalf("reserve %+v: %v %v", req, r, err)
	}
	res, err := awaitReservation(c, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.ReservationID != id {
		t.Fatalf("asked for %s, got %+v", id, res)
	}
	return res
}

func getEvent(t testing.TB, c *Client, name string) Event {
	t.Helper()
	var ev Event
	r, err := c.do(http.MethodGet, "/v1/event/"+name, nil, &ev)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("get event: %v %v", r, err)
	}
	return ev
}

// areaSeats reads an area's seat map and checks that it agrees with its
// holders and its available count; it returns the holder of each seat.
func areaSeats(t testing.TB, c *Client, event, area string) map[Seat]string {
	t.Helper()
	var a AreaSeats
	r, err := c.do(http.MethodGet, "/v1/event/"+event+"/area/"+area, nil, &a)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("get area: %v %v", r, err)
	}
	owner := make(map[Seat]string)
	for _, s := range a.Taken {
		seat := Seat{s.Row, s.Col}
		if prev, dup := owner[seat]; dup {
			t.Fatalf("seat %v of %s/%s held by %s and %s", seat, event, area, prev, s.ReservationID)
		}
		owner[seat] = s.ReservationID
	}
	free := 0
	for row, line := range a.SeatMap {
		for col, ch := range line {
			_, held := owner[Seat{row, col}]
			if (ch == 'x') != held {
				t.Fatalf("seat (%d, %d) of %s/%s: map %q, held %v", row, col, event, area, ch, held)
			}
			if ch == '.' {
				free++
			}
		}
	}
	if free != a.Available {
		t.Fatalf("%s/%s: %d free in the map, available says %d", event, area, free, a.Available)
	}
	return owner
}
