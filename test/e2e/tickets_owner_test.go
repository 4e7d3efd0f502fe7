package e2e

import (
	"net/http"
	"testing"
)

// On a server with an API key a hold is its owner's: the public seat map
// names no reservation, cancelling takes the hold token the filing reply
// carried (or the key), and paying takes the key and the account of the
// reservation's user.
func TestTicketHoldsOnlyTheirOwnerCanTouch(t *testing.T) {
	srv := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", "k3y"}, nil)
	srv.awaitReady("k3y")
	operator, public := srv.c, srv.c.withKey("")
	for _, id := range []string{"org", "fan", "other"} {
		if _, r, err := operator.CreateAccount(NewAccount{ID: id, Currency: "USD"}); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("account %s: %v %v", id, r, err)
		}
	}
	for _, id := range []string{"fan", "other"} {
		if _, r, err := operator.Transfer(TransferReq{From: "@world", To: id, Amount: 10_000}); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("funding %s: %v %v", id, r, err)
		}
	}
	mustCreateEvent(t, operator, Event{EventName: "gig", Artist: "band", Organizer: "org",
		Areas: []EventArea{{AreaID: "A", Price: 100, RowCount: 1, ColCount: 4}}})
	r, err := public.do(http.MethodPost, "/v1/event/gig/reservation", ReserveReq{UserID: "fan", EventID: "gig", AreaID: "A", NumOfSeats: 2, Type: "RANDOM"}, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("reserve: %v %v", r, err)
	}
	id, token := string(r.Body), r.Header.Get("Reservation-Token")
	if res, err := awaitReservation(public, id); err != nil || res.State != "RESERVED" {
		t.Fatalf("reservation: %+v %v", res, err)
	}

	var seats AreaSeats
	if r, err := public.do(http.MethodGet, "/v1/event/gig/area/A", nil, &seats); err != nil || len(seats.Taken) != 2 {
		t.Fatalf("seat map: %v %+v %v", r, seats, err)
	}
	for _, s := range seats.Taken {
		if s.ReservationID != "" {
			t.Errorf("the public seat map names reservation %s", s.ReservationID)
		}
	}
	if owner := areaSeats(t, operator, "gig", "A"); owner[Seat{0, 1}] != id {
		t.Errorf("the operator's seat map: %v, want %s", owner, id)
	}

	cancel := func(c *Client, token string) *Response {
		t.Helper()
		if token != "" {
			c = c.withHeader("Reservation-Token", token)
		}
		r, err := c.do(http.MethodDelete, "/v1/reservation/"+id, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := cancel(public, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("cancel with neither token nor key: %v", r)
	}
	if r := cancel(public, "x"+token); r.Status != http.StatusForbidden {
		t.Errorf("cancel with a wrong token: %v", r)
	}
	if r, err := public.do(http.MethodPost, "/v1/reservation/"+id+"/pay", map[string]string{"account": "fan"}, nil); err != nil || r.Status != http.StatusUnauthorized {
		t.Errorf("pay without the key: %v %v", r, err)
	}
	if r, err := operator.do(http.MethodPost, "/v1/reservation/"+id+"/pay", map[string]string{"account": "other"}, nil); err != nil || r.Status != http.StatusForbidden {
		t.Errorf("pay from another user's account: %v %v", r, err)
	}
	wantAccount(t, operator, "other", 10_000)
	if r := cancel(public, token); r.Status != http.StatusOK {
		t.Errorf("cancel with the hold token: %v", r)
	}
	if res, _ := awaitReservation(public, id); res.State != "CANCELLED" {
		t.Errorf("after the owner's cancel: %+v", res)
	}
}
