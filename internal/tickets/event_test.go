package tickets

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func validSpec() EventSpec {
	return EventSpec{
		EventName: "event-1",
		Artist:    "Jay Chou",
		Areas: []AreaSpec{
			{AreaID: "A", Price: 3800, RowCount: 20, ColCount: 20},
			{AreaID: "B", Price: 0, RowCount: 1, ColCount: 1},
		},
		ReservationOpeningTime: t0,
		ReservationClosingTime: t0.Add(time.Hour),
		EventStartTime:         t0.Add(24 * time.Hour),
		EventEndTime:           t0.Add(27 * time.Hour),
		HoldTime:               5 * time.Minute,
		Organizer:              "organizer-1",
		PerUserSeatLimit:       4,
	}
}

func TestEventSpecValidate(t *testing.T) {
	manyAreas := func(n, rows, cols int) []AreaSpec {
		areas := make([]AreaSpec, n)
		for i := range areas {
			areas[i] = AreaSpec{AreaID: "a" + strings.Repeat("x", i/26) + string(rune('a'+i%26)), RowCount: rows, ColCount: cols}
		}
		return areas
	}
	tests := []struct {
		name   string
		change func(s *EventSpec)
		want   string // "" for valid; else a part of the error
	}{
		{"valid", func(*EventSpec) {}, ""},
		{"only the required fields", func(s *EventSpec) {
			*s = EventSpec{EventName: "e", Artist: "a", Areas: []AreaSpec{{AreaID: "0", RowCount: 1, ColCount: 1}}}
		}, ""},
		{"ticket-master style names", func(s *EventSpec) { s.EventName = "event-9b2e1c3a-1d7f-4c55-b2a8-0f5f8a7c1e21" }, ""},
		{"largest area", func(s *EventSpec) { s.Areas = manyAreas(1, 1000, 1000) }, ""},
		{"most areas", func(s *EventSpec) { s.Areas = manyAreas(1000, 1, 1) }, ""},
		{"sales open and close at the event end", func(s *EventSpec) {
			s.ReservationClosingTime, s.EventStartTime = s.EventEndTime, s.EventEndTime
		}, ""},
		{"sales go on after the start", func(s *EventSpec) { s.ReservationClosingTime = s.EventStartTime.Add(time.Hour) }, ""},
		{"empty name", func(s *EventSpec) { s.EventName = "" }, "eventName must be 1 to 128"},
		{"name with a slash", func(s *EventSpec) { s.EventName = "a/b" }, "eventName must be"},
		{"name with a space", func(s *EventSpec) { s.EventName = "a b" }, "eventName must be"},
		{"name too long", func(s *EventSpec) { s.EventName = strings.Repeat("n", 129) }, "eventName must be"},
		{"empty artist", func(s *EventSpec) { s.Artist = "" }, "artist must be 1 to 256 bytes"},
		{"artist with a newline", func(s *EventSpec) { s.Artist = "a\nb" }, "artist must be"},
		{"artist not UTF-8", func(s *EventSpec) { s.Artist = "a\xffb" }, "artist must be"},
		{"artist too long", func(s *EventSpec) { s.Artist = strings.Repeat("é", 129) }, "artist must be"},
		{"no areas", func(s *EventSpec) { s.Areas = nil }, "areas must list 1 to 1000 areas"},
		{"too many areas", func(s *EventSpec) { s.Areas = manyAreas(1001, 1, 1) }, "areas must list"},
		{"area id empty", func(s *EventSpec) { s.Areas[1].AreaID = "" }, "areas[1].areaId must be"},
		{"area id with a slash", func(s *EventSpec) { s.Areas[0].AreaID = "A/1" }, "areas[0].areaId must be"},
		{"area listed twice", func(s *EventSpec) { s.Areas[1].AreaID = "A" }, `areas[1].areaId "A" is listed twice`},
		{"negative price", func(s *EventSpec) { s.Areas[0].Price = -1 }, "areas[0].price must be from 0 to"},
		{"price overflowing a payment", func(s *EventSpec) { s.Areas[0].Price = MaxPrice + 1 }, "areas[0].price"},
		{"no rows", func(s *EventSpec) { s.Areas[0].RowCount = 0 }, "areas[0].rowCount must be from 1 to 1000"},
		{"too many rows", func(s *EventSpec) { s.Areas[1].RowCount = 1001 }, "areas[1].rowCount"},
		{"no columns", func(s *EventSpec) { s.Areas[0].ColCount = 0 }, "areas[0].colCount must be from 1 to 1000"},
		{"too many columns", func(s *EventSpec) { s.Areas[0].ColCount = 1001 }, "areas[0].colCount"},
		{"too many seats in all", func(s *EventSpec) { s.Areas = manyAreas(2, 1000, 501) }, "areas hold 1002000 seats in all"},
		{"sales close before they open", func(s *EventSpec) {
			s.ReservationClosingTime = s.ReservationOpeningTime.Add(-time.Second)
		}, "reservationClosingTime must be after reservationOpeningTime"},
		{"sales close as they open", func(s *EventSpec) { s.ReservationClosingTime = s.ReservationOpeningTime }, "reservationClosingTime must be after"},
		{"sales open after the event", func(s *EventSpec) {
			s.ReservationClosingTime = time.Time{}
			s.ReservationOpeningTime = s.EventEndTime.Add(time.Second)
		}, "eventEndTime must be after reservationOpeningTime"},
		{"sales close after the event", func(s *EventSpec) { s.ReservationClosingTime = s.EventEndTime.Add(time.Second) }, "eventEndTime must be after reservationClosingTime"},
		{"event ends before it starts", func(s *EventSpec) { s.EventEndTime = s.EventStartTime.Add(-time.Second) }, "eventEndTime must be after eventStartTime"},
		{"negative hold", func(s *EventSpec) { s.HoldTime = -time.Second }, "holdTime must be from 0"},
		{"hold too long", func(s *EventSpec) { s.HoldTime = MaxHoldTime + time.Second }, "holdTime"},
		{"organizer with a space", func(s *EventSpec) { s.Organizer = "my org" }, "organizer must be"},
		{"system account as organizer", func(s *EventSpec) { s.Organizer = ledger.WorldID }, "organizer must be"},
		{"negative seat limit", func(s *EventSpec) { s.PerUserSeatLimit = -1 }, "perUserSeatLimit must be from 0"},
		{"seat limit too high", func(s *EventSpec) { s.PerUserSeatLimit = MaxPerUserSeatLimit + 1 }, "perUserSeatLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.change(&s)
			err := s.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v; want nil", err)
			case tt.want == "":
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %v; want an error containing %q", err, tt.want)
			case ledger.CodeOf(err) != ledger.CodeInvalidArgument:
				t.Fatalf("Validate() code %q; want %q", ledger.CodeOf(err), ledger.CodeInvalidArgument)
			}
		})
	}
}

func TestEventSpecSameAs(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *EventSpec)
		same   bool
	}{
		{"identical", func(*EventSpec) {}, true},
		{"same instants in another zone", func(s *EventSpec) {
			s.ReservationOpeningTime = s.ReservationOpeningTime.In(time.FixedZone("UTC+8", 8*3600))
		}, true},
		{"other hold", func(s *EventSpec) { s.HoldTime = DefaultHoldTime }, false},
		{"other artist", func(s *EventSpec) { s.Artist = "other" }, false},
		{"other price", func(s *EventSpec) { s.Areas[0].Price++ }, false},
		{"other size", func(s *EventSpec) { s.Areas[1].ColCount++ }, false},
		{"areas reordered", func(s *EventSpec) { s.Areas[0], s.Areas[1] = s.Areas[1], s.Areas[0] }, false},
		{"one area fewer", func(s *EventSpec) { s.Areas = s.Areas[:1] }, false},
		{"other opening", func(s *EventSpec) { s.ReservationOpeningTime = s.ReservationOpeningTime.Add(time.Second) }, false},
		{"closing unset", func(s *EventSpec) { s.ReservationClosingTime = time.Time{} }, false},
		{"other start", func(s *EventSpec) { s.EventStartTime = s.EventStartTime.Add(time.Second) }, false},
		{"other end", func(s *EventSpec) { s.EventEndTime = s.EventEndTime.Add(time.Second) }, false},
		{"other organizer", func(s *EventSpec) { s.Organizer = "someone" }, false},
		{"other limit", func(s *EventSpec) { s.PerUserSeatLimit = 5 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, other := validSpec(), validSpec()
			tt.change(&other)
			if got := s.SameAs(&other); got != tt.same {
				t.Fatalf("SameAs = %v; want %v", got, tt.same)
			}
			if got := other.SameAs(&s); got != tt.same {
				t.Fatalf("SameAs is not symmetric: %v", got)
			}
		})
	}
	// An unset hold is the default hold.
	a, b := validSpec(), validSpec()
	a.HoldTime, b.HoldTime = 0, DefaultHoldTime
	if !a.SameAs(&b) {
		t.Fatal("an unset hold differs from the default spelt out")
	}
}

func TestEventSpecOpenAt(t *testing.T) {
	s := validSpec()
	tests := []struct {
		now    time.Time
		reason Reason
		detail string
	}{
		{t0.Add(-time.Nanosecond), ReasonNotOpen, "reservations for event event-1 open at 2026-12-01T10:00:00Z"},
		{t0, "", ""},
		{t0.Add(59 * time.Minute), "", ""},
		{t0.Add(time.Hour - time.Nanosecond), "", ""},
		{t0.Add(time.Hour), ReasonClosed, "reservations for event event-1 closed at 2026-12-01T11:00:00Z"},
		{t0.Add(48 * time.Hour), ReasonClosed, "reservations for event event-1 closed at 2026-12-01T11:00:00Z"},
	}
	for _, tt := range tests {
		if reason, detail := s.OpenAt(tt.now); reason != tt.reason || detail != tt.detail {
			t.Errorf("OpenAt(%v) = %q, %q; want %q, %q", tt.now, reason, detail, tt.reason, tt.detail)
		}
	}
	unbounded := EventSpec{EventName: "e"}
	for _, now := range []time.Time{{}, t0, t0.Add(100 * 365 * 24 * time.Hour)} {
		if reason, _ := unbounded.OpenAt(now); reason != "" {
			t.Errorf("an event without times is %q at %v", reason, now)
		}
	}
}

func TestEventSpecCheckSeatLimit(t *testing.T) {
	s := validSpec() // limit 4
	tests := []struct {
		held, requested int
		reason          Reason
	}{
		{0, 4, ""}, {3, 1, ""}, {0, 5, ReasonSeatLimit}, {4, 1, ReasonSeatLimit}, {2, 3, ReasonSeatLimit},
	}
	for _, tt := range tests {
		reason, detail := s.CheckSeatLimit(tt.held, tt.requested)
		if reason != tt.reason || (reason != "") != (detail != "") {
			t.Errorf("CheckSeatLimit(%d, %d) = %q, %q; want %q", tt.held, tt.requested, reason, detail, tt.reason)
		}
	}
	if _, detail := s.CheckSeatLimit(2, 3); detail != "at most 4 seats per user in event event-1" {
		t.Errorf("detail %q", detail)
	}
	s.PerUserSeatLimit = 0
	if reason, _ := s.CheckSeatLimit(1_000_000, 50); reason != "" {
		t.Errorf("no limit refused: %q", reason)
	}
}

func TestEventSpecEffectiveHoldTime(t *testing.T) {
	s := validSpec()
	if s.EffectiveHoldTime() != 5*time.Minute {
		t.Fatalf("EffectiveHoldTime() = %v; want the 5m set", s.EffectiveHoldTime())
	}
	s.HoldTime = 0
	if s.EffectiveHoldTime() != DefaultHoldTime {
		t.Fatalf("EffectiveHoldTime() = %v; want the default %v", s.EffectiveHoldTime(), DefaultHoldTime)
	}
}
