package tickets

import "time"

// EventStatus is an event with the availability of its areas.
type EventStatus struct {
	Spec  EventSpec
	Areas []AreaStatus
	// SoldOutAt is when the last seat of the event was sold; zero while any
	// is free.
	SoldOutAt time.Time
}

// AreaStatus is the availability of one area, as of the last commit.
type AreaStatus struct {
	Spec      AreaSpec
	Available int
	SoldOutAt time.Time
}

// AreaSeats is an area's seat map and the reservations holding its seats.
type AreaSeats struct {
	Spec      AreaSpec
	Available int
	SeatMap   []string
	Holders   []Reservation
}
