package ticketapi

import (
	"time"

	"github.com/surge-dev/surge/internal/tickets"
)

// The JSON shapes of ticket-master's API (its EventBean, AreaBean,
// CreateReservationBean and ReservationBean), plus surge's optional fields.

type eventJSON struct {
	EventName              string     `json:"eventName"`
	Artist                 string     `json:"artist"`
	Areas                  []areaJSON `json:"areas"`
	ReservationOpeningTime *time.Time `json:"reservationOpeningTime,omitempty"`
	ReservationClosingTime *time.Time `json:"reservationClosingTime,omitempty"`
	EventStartTime         *time.Time `json:"eventStartTime,omitempty"`
	EventEndTime           *time.Time `json:"eventEndTime,omitempty"`
	// Beyond ticket-master.
	HoldSeconds      int64  `json:"holdSeconds,omitempty"`
	Organizer        string `json:"organizer,omitempty"`
	PerUserSeatLimit int    `json:"perUserSeatLimit,omitempty"`
	// Only in replies of GET /v1/event/{id}.
	SoldOutAt *time.Time `json:"soldOutAt,omitempty"`
}

type areaJSON struct {
	AreaID   string `json:"areaId"`
	Price    int64  `json:"price"`
	RowCount int    `json:"rowCount"`
	ColCount int    `json:"colCount"`
	// Only in replies of GET /v1/event/{id}.
	Available *int       `json:"available,omitempty"`
	Sold      *int       `json:"sold,omitempty"`
	SoldOutAt *time.Time `json:"soldOutAt,omitempty"`
}

type reserveJSON struct {
	UserID     string         `json:"userId"`
	EventID    string         `json:"eventId"`
	AreaID     string         `json:"areaId"`
	NumOfSeats int            `json:"numOfSeats"`
	NumOfSeat  int            `json:"numOfSeat"` // sent by ticket-master's beans; ignored
	Seats      []tickets.Seat `json:"seats"`
	Type       tickets.Kind   `json:"type"`
}

type reservationJSON struct {
	ReservationID string         `json:"reservationId"`
	UserID        string         `json:"userId"`
	EventID       string         `json:"eventId"`
	AreaID        string         `json:"areaId"`
	NumOfSeats    int            `json:"numOfSeats"`
	NumOfSeat     int            `json:"numOfSeat"`
	Type          tickets.Kind   `json:"type"`
	Seats         []tickets.Seat `json:"seats"`
	State         tickets.State  `json:"state"`
	FailedReason  string         `json:"failedReason"`
	// Beyond ticket-master.
	HoldUntil *time.Time `json:"holdUntil,omitempty"`
	PaymentID string     `json:"paymentId,omitempty"`
}

type payJSON struct {
	Account string `json:"account"`
}

type areaSeatsJSON struct {
	AreaID    string      `json:"areaId"`
	RowCount  int         `json:"rowCount"`
	ColCount  int         `json:"colCount"`
	Available int         `json:"available"`
	SeatMap   []string    `json:"seatMap"`
	Taken     []takenJSON `json:"taken"`
}

type takenJSON struct {
	Row           int           `json:"row"`
	Col           int           `json:"col"`
	ReservationID string        `json:"reservationId,omitempty"`
	State         tickets.State `json:"state"`
}

func (j *eventJSON) spec() tickets.EventSpec {
	s := tickets.EventSpec{
		EventName: j.EventName, Artist: j.Artist, HoldTime: time.Duration(j.HoldSeconds) * time.Second,
		Organizer: j.Organizer, PerUserSeatLimit: j.PerUserSeatLimit,
		ReservationOpeningTime: orZero(j.ReservationOpeningTime), ReservationClosingTime: orZero(j.ReservationClosingTime),
		EventStartTime: orZero(j.EventStartTime), EventEndTime: orZero(j.EventEndTime),
	}
	for _, a := range j.Areas {
		s.Areas = append(s.Areas, tickets.AreaSpec{AreaID: a.AreaID, Price: a.Price, RowCount: a.RowCount, ColCount: a.ColCount})
	}
	return s
}

func eventOf(s *tickets.EventSpec) eventJSON {
	j := eventJSON{
		EventName: s.EventName, Artist: s.Artist, Areas: make([]areaJSON, len(s.Areas)),
		ReservationOpeningTime: orNil(s.ReservationOpeningTime), ReservationClosingTime: orNil(s.ReservationClosingTime),
		EventStartTime: orNil(s.EventStartTime), EventEndTime: orNil(s.EventEndTime),
		HoldSeconds: int64(s.EffectiveHoldTime() / time.Second), Organizer: s.Organizer, PerUserSeatLimit: s.PerUserSeatLimit,
	}
	for i, a := range s.Areas {
		j.Areas[i] = areaJSON{AreaID: a.AreaID, Price: a.Price, RowCount: a.RowCount, ColCount: a.ColCount}
	}
	return j
}

func statusOf(st *tickets.EventStatus) eventJSON {
	j := eventOf(&st.Spec)
	j.SoldOutAt = orNil(st.SoldOutAt)
	for i, a := range st.Areas {
		available, sold := a.Available, a.Spec.RowCount*a.Spec.ColCount-a.Available
		j.Areas[i].Available, j.Areas[i].Sold, j.Areas[i].SoldOutAt = &available, &sold, orNil(a.SoldOutAt)
	}
	return j
}

func reservationOf(r *tickets.Reservation) reservationJSON {
	j := reservationJSON{
		ReservationID: r.ID, UserID: r.UserID, EventID: r.EventID, AreaID: r.AreaID,
		NumOfSeats: r.NumOfSeats, Type: r.Kind, Seats: r.Seats, State: r.State,
		FailedReason: r.FailureText(), PaymentID: r.PaymentID,
	}
	if r.Seats == nil {
		j.Seats = []tickets.Seat{}
	}
	if r.HoldsSeats() {
		j.NumOfSeat = len(r.Seats)
	}
	if r.State == tickets.Reserved {
		j.HoldUntil = orNil(r.HoldUntil)
	}
	return j
}

// areaSeatsOf is a's seat map; the holders' reservation ids only when
// withIDs (for the operator).
func areaSeatsOf(a *tickets.AreaSeats, withIDs bool) areaSeatsJSON {
	j := areaSeatsJSON{
		AreaID: a.Spec.AreaID, RowCount: a.Spec.RowCount, ColCount: a.Spec.ColCount,
		Available: a.Available, SeatMap: a.SeatMap, Taken: []takenJSON{},
	}
	for _, r := range a.Holders {
		for _, s := range r.Seats {
			t := takenJSON{Row: s.Row, Col: s.Col, State: r.State}
			if withIDs {
				t.ReservationID = r.ID
			}
			j.Taken = append(j.Taken, t)
		}
	}
	return j
}

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func orNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
