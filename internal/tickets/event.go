package tickets

import (
	"fmt"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/surge-dev/surge/internal/ledger"
)

// Limits on an event. They bound the memory an event takes (a seat is one
// bit plus its share of per-row counters) and keep every payment, price ×
// seats, a valid ledger amount.
const (
	// MaxNameLength bounds event names, area ids and organizer ids. Within
	// it the limits of ledger ids hold, so an organizer is a valid account id.
	MaxNameLength   = 128
	MaxArtistLength = 256
	MaxAreas        = 1000
	// MaxRowsOrCols bounds an area's row count and column count each.
	MaxRowsOrCols = 1000
	MaxEventSeats = 1_000_000
	// MaxPrice is such that MaxSeatsPerReservation seats cost at most
	// ledger.MaxAmount.
	MaxPrice            = ledger.MaxAmount / MaxSeatsPerReservation
	DefaultHoldTime     = 10 * time.Minute
	MaxHoldTime         = 24 * time.Hour
	MaxPerUserSeatLimit = 1_000_000
)

// AreaSpec is one area of an event as its organizer defines it.
type AreaSpec struct {
	AreaID string
	// Price is per seat, in minor units of the organizer's currency.
	Price    int64
	RowCount int
	ColCount int
}

// EventSpec is an event as its organizer defines it. The event's id is its
// EventName (as in ticket-master). Zero times are unset.
type EventSpec struct {
	EventName string
	Artist    string
	Areas     []AreaSpec
	// Reservations are accepted from ReservationOpeningTime (inclusive) to
	// ReservationClosingTime (exclusive), each bound only when set.
	ReservationOpeningTime time.Time
	ReservationClosingTime time.Time
	EventStartTime         time.Time
	EventEndTime           time.Time
	// HoldTime is how long a reservation holds its seats unpaid; 0 means
	// DefaultHoldTime.
	HoldTime time.Duration
	// Organizer is the ledger account that payments go to; "" if the event
	// takes no payments.
	Organizer string
	// PerUserSeatLimit caps the seats one user may hold in the event; 0 is
	// no limit.
	PerUserSeatLimit int
}

// Validate checks the spec against the rules and limits above. The error is
// a *ledger.Error with code invalid_argument naming the field at fault.
func (s *EventSpec) Validate() error {
	if !validName(s.EventName) {
		return invalid("eventName %s", msgName)
	}
	if !validText(s.Artist, MaxArtistLength) {
		return invalid("artist must be 1 to %d bytes of UTF-8 text without control characters", MaxArtistLength)
	}
	if err := validateAreas(s.Areas); err != nil {
		return err
	}
	if err := s.validateTimes(); err != nil {
		return err
	}
	switch {
	case s.HoldTime < 0 || s.HoldTime > MaxHoldTime:
		return invalid("holdTime must be from 0 (default %v) to %v", DefaultHoldTime, MaxHoldTime)
	case s.Organizer != "" && !validName(s.Organizer):
		return invalid("organizer %s", msgName)
	case s.PerUserSeatLimit < 0 || s.PerUserSeatLimit > MaxPerUserSeatLimit:
		return invalid("perUserSeatLimit must be from 0 (no limit) to %d", MaxPerUserSeatLimit)
	}
	return nil
}

func validateAreas(areas []AreaSpec) error {
	if len(areas) == 0 || len(areas) > MaxAreas {
		return invalid("areas must list 1 to %d areas", MaxAreas)
	}
	seen := make(map[string]bool, len(areas))
	seats := 0
	for i, a := range areas {
		switch {
		case !validName(a.AreaID):
			return invalid("areas[%d].areaId %s", i, msgName)
		case seen[a.AreaID]:
			return invalid("areas[%d].areaId %q is listed twice", i, a.AreaID)
		case a.Price < 0 || a.Price > MaxPrice:
			return invalid("areas[%d].price must be from 0 to %d", i, int64(MaxPrice))
		case a.RowCount < 1 || a.RowCount > MaxRowsOrCols:
			return invalid("areas[%d].rowCount must be from 1 to %d", i, MaxRowsOrCols)
		case a.ColCount < 1 || a.ColCount > MaxRowsOrCols:
			return invalid("areas[%d].colCount must be from 1 to %d", i, MaxRowsOrCols)
		}
		seen[a.AreaID] = true
		seats += a.RowCount * a.ColCount
	}
	if seats > MaxEventSeats {
		return invalid("areas hold %d seats in all: at most %d per event", seats, MaxEventSeats)
	}
	return nil
}

// validateTimes checks that the times given are in order: sales open before
// they close and before the event ends, close by the end, and the event
// starts by its end. Sales may go on after the start (late arrivals).
func (s *EventSpec) validateTimes() error {
	order := []struct {
		early, late         time.Time
		earlyName, lateName string
		mayEqual            bool
	}{
		{s.ReservationOpeningTime, s.ReservationClosingTime, "reservationOpeningTime", "reservationClosingTime", false},
		{s.ReservationOpeningTime, s.EventEndTime, "reservationOpeningTime", "eventEndTime", false},
		{s.ReservationClosingTime, s.EventEndTime, "reservationClosingTime", "eventEndTime", true},
		{s.EventStartTime, s.EventEndTime, "eventStartTime", "eventEndTime", true},
	}
	for _, o := range order {
		if o.early.IsZero() || o.late.IsZero() {
			continue
		}
		if o.late.Before(o.early) || (!o.mayEqual && o.late.Equal(o.early)) {
			return invalid("%s must be after %s", o.lateName, o.earlyName)
		}
	}
	return nil
}

// EffectiveHoldTime is HoldTime with its default applied.
func (s *EventSpec) EffectiveHoldTime() time.Duration {
	if s.HoldTime == 0 {
		return DefaultHoldTime
	}
	return s.HoldTime
}

// SameAs reports whether creating other when s exists is an idempotent
// replay: every field equal (times as instants, hold times after defaults,
// areas in the same order). Anything else is a conflicting re-creation.
func (s *EventSpec) SameAs(other *EventSpec) bool {
	return s.EventName == other.EventName &&
		s.Artist == other.Artist &&
		slices.Equal(s.Areas, other.Areas) &&
		s.ReservationOpeningTime.Equal(other.ReservationOpeningTime) &&
		s.ReservationClosingTime.Equal(other.ReservationClosingTime) &&
		s.EventStartTime.Equal(other.EventStartTime) &&
		s.EventEndTime.Equal(other.EventEndTime) &&
		s.EffectiveHoldTime() == other.EffectiveHoldTime() &&
		s.Organizer == other.Organizer &&
		s.PerUserSeatLimit == other.PerUserSeatLimit
}

// OpenAt says whether the event takes reservations at now: reason "" if so,
// NOT_OPEN before the opening time, CLOSED from the closing time on, with a
// detail that gives the time.
func (s *EventSpec) OpenAt(now time.Time) (reason Reason, detail string) {
	switch {
	case !s.ReservationOpeningTime.IsZero() && now.Before(s.ReservationOpeningTime):
		return ReasonNotOpen, fmt.Sprintf("reservations for event %s open at %s",
			s.EventName, s.ReservationOpeningTime.UTC().Format(time.RFC3339))
	case !s.ReservationClosingTime.IsZero() && !now.Before(s.ReservationClosingTime):
		return ReasonClosed, fmt.Sprintf("reservations for event %s closed at %s",
			s.EventName, s.ReservationClosingTime.UTC().Format(time.RFC3339))
	}
	return "", ""
}

func invalid(format string, args ...any) error {
	return ledger.Errorf(ledger.CodeInvalidArgument, format, args...)
}

// msgName is the rule validName checks, for error details.
const msgName = "must be 1 to 128 characters from A-Z a-z 0-9 . _ : -"

// validName reports whether name is 1 to MaxNameLength bytes of
// [A-Za-z0-9._:-]: safe in a URL path, and a valid ledger account id.
func validName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// validText reports whether text is 1 to maxBytes bytes of valid UTF-8
// without control characters.
func validText(text string, maxBytes int) bool {
	if len(text) == 0 || len(text) > maxBytes || !utf8.ValidString(text) {
		return false
	}
	for _, r := range text {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
