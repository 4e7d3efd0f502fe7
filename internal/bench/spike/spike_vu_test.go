package spike

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSeatsProblem(t *testing.T) {
	tests := []struct {
		seats []spikeSeat
		n     int
		want  string // "" for none; else a part of the problem
	}{
		{seats(0, 3), 1, ""},
		{seats(2, 0, 2, 1, 2, 2, 2, 3), 4, ""},
		{seats(1, 16, 1, 17, 1, 18, 1, 19), 4, ""},
		{seats(0, 3, 0, 4), 3, "2 seats for a request of 3"},
		{nil, 1, "0 seats for a request of 1"},
		{seats(0, 3, 0, 5), 2, "not adjacent"},
		{seats(0, 4, 0, 3), 2, "not adjacent"},
		{seats(0, 3, 1, 4), 2, "not adjacent"},
		{seats(0, 3, 0, 3), 2, "not adjacent"},
		{seats(0, 19, 0, 20), 2, "seat (0, 20) is outside the 20×20 area"},
		{seats(-1, 0), 1, "outside"},
		{seats(20, 0), 1, "outside"},
	}
	for _, tt := range tests {
		got := seatsProblem(tt.seats, tt.n, 20, 20)
		if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
			t.Errorf("seatsProblem(%v, %d) = %q; want %q", tt.seats, tt.n, got, tt.want)
		}
	}
}

func TestReasonCode(t *testing.T) {
	tests := map[string]string{
		"[NOT_AVAILABLE]: no continuous 2 seats at area 3 in event e": "NOT_AVAILABLE",
		"[CLOSED]: reservations for event e closed at ...":            "CLOSED",
		"[INVALID_EVENT_AREA]: e#A event area does not exist":         "INVALID_EVENT_AREA",
		"request rejected at cache level":                             "other",
		"":                                                            "other",
		"[]: empty":                                                   "other",
		"[NOT CLOSED]: spaces":                                        "other",
		"[UNTERMINATED":                                               "other",
	}
	for reason, want := range tests {
		if got := reasonCode(reason); got != want {
			t.Errorf("reasonCode(%q) = %q; want %q", reason, got, want)
		}
	}
}

// newTestVU is a worker of a run over testPlan's two 2×4 areas.
func newTestVU() *spikeVU {
	cfg := DefaultSpikeConfig()
	cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols = 1, 2, 2, 4
	s := newSpikeRun(cfg, nil, newSpikePlan(cfg, "e"), "run")
	return &spikeVU{s: s, tally: spikeTally{outcomes: map[string]int64{}}}
}

func TestPostReply(t *testing.T) {
	tests := []struct {
		reply     string
		id        string
		final     bool
		wantError string
	}{
		{"3f0e5a8e-2c4b-4d1e-9a57-0c2f7b1f6d10", "3f0e5a8e-2c4b-4d1e-9a57-0c2f7b1f6d10", false, ""},
		{" r-1\n", "r-1", false, ""},
		{`{"reservationId":"r-2","state":"PROCESSING"}`, "r-2", false, ""},
		{`{"reservationId":"r-3","state":"RESERVED","seats":[{"row":0,"col":1}]}`, "r-3", true, ""},
		{`{"reservationId":"r-4","state":"FAILED","failedReason":"[NOT_AVAILABLE]: x"}`, "r-4", true, ""},
		{"", "", false, "is not 1 to 64 characters"},
		{"../../v1/event", "", false, "is not 1 to 64 characters"},
		{"r-1?x=1", "", false, "is not 1 to 64 characters"},
		{strings.Repeat("a", 65), "", false, "is not 1 to 64 characters"},
		{`{"reservationId":"r-5","state":`, "", false, "decoding the reservation"},
		{`{"state":"RESERVED"}`, "", false, "is not 1 to 64 characters"},
	}
	for _, tt := range tests {
		v := newTestVU()
		id, final, err := v.postReply([]byte(tt.reply))
		if id != tt.id || final != tt.final || (err == nil) != (tt.wantError == "") ||
			(err != nil && !strings.Contains(err.Error(), tt.wantError)) {
			t.Errorf("postReply(%q) = %q, %v, %v; want %q, %v, %q", tt.reply, id, final, err, tt.id, tt.final, tt.wantError)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		reply string
		want  reservationJSON
		err   string
	}{
		{`{"reservationId":"r","userId":"u","eventId":"e","areaId":"a","numOfSeats":2,"numOfSeat":2,"type":"RANDOM",` +
			`"seats":[{"row":3,"col":4},{"col":5,"row":3}],"state":"RESERVED","failedReason":"","holdUntil":"2026-11-22T10:10:00Z"}`,
			reservationJSON{ReservationID: "r", EventID: "e", AreaID: "a", State: "RESERVED", Seats: seats(3, 4, 3, 5)}, ""},
		{` { "state" : "FAILED", "failedReason": "[NOT_AVAILABLE]: \"x\" \u00e9", "seats": null } `,
			reservationJSON{State: "FAILED", FailedReason: `[NOT_AVAILABLE]: "x" é`}, ""},
		{`{"state":"RESERVED","seats":[]}`, reservationJSON{State: "RESERVED"}, ""},
		{`[]`, reservationJSON{}, "not an object"},
		{`{"state":5}`, reservationJSON{}, "state:"},
		{`{"seats":{}}`, reservationJSON{}, "seats:"},
		{`{"seats":[1]}`, reservationJSON{}, "is not an object"},
		{`{"seats":[{"row":1}]}`, reservationJSON{}, "has no col"},
		{`{"seats":[{"row":1,"col":1.5}]}`, reservationJSON{}, "col:"},
		{`{"state":"RESERVED"`, reservationJSON{}, "decoding the reservation"},
	}
	for _, tt := range tests {
		v := newTestVU()
		v.res.Seats = seats(9, 9) // left over from an earlier reply
		err := v.decode([]byte(tt.reply))
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("decode(%s) error %v; want %q", tt.reply, err, tt.err)
			continue
		}
		if err == nil && (fmt.Sprint(v.res) != fmt.Sprint(tt.want)) {
			t.Errorf("decode(%s) = %+v; want %+v", tt.reply, v.res, tt.want)
		}
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		n       int
		failure string
		outcome string
		sold    int64
	}{
		{"reserved", `{"eventId":"e-0","areaId":"1","state":"RESERVED","seats":[{"row":1,"col":1},{"row":1,"col":2}]}`, 2, "", "RESERVED", 2},
		{"reserved, ids left out", `{"state":"RESERVED","seats":[{"row":0,"col":0}]}`, 1, "", "RESERVED", 1},
		{"failed", `{"state":"FAILED","failedReason":"[NOT_AVAILABLE]: no continuous 2 seats"}`, 2, "", "FAILED NOT_AVAILABLE", 0},
		{"other area", `{"eventId":"e-0","areaId":"0","state":"RESERVED","seats":[{"row":1,"col":1}]}`, 1, "200 wrong_area", "", 0},
		{"other event", `{"eventId":"x","areaId":"1","state":"FAILED"}`, 1, "200 wrong_area", "", 0},
		{"fewer seats", `{"state":"RESERVED","seats":[{"row":1,"col":1}]}`, 2, "200 bad_seats", "RESERVED", 1},
		{"seat outside", `{"state":"RESERVED","seats":[{"row":1,"col":3},{"row":1,"col":4}]}`, 2, "200 bad_seats", "RESERVED", 1},
		{"not final", `{"state":"PROCESSING"}`, 1, "200 not_final", "", 0},
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVU()
			if err := v.decode([]byte(tt.reply)); err != nil {
				t.Fatal(err)
			}
			o := v.judge(1, tt.n, "r-1", now)
			if o.Failure != tt.failure || (o.Failure != "") != (o.Detail != "") {
				t.Fatalf("judge = %+v; want failure %q with a detail", o, tt.failure)
			}
			var counted int64
			for _, n := range v.tally.outcomes {
				counted += n
			}
			if (tt.outcome == "" && counted != 0) || (tt.outcome != "" && (counted != 1 || v.tally.outcomes[tt.outcome] != 1)) {
				t.Fatalf("outcomes %v; want one %q", v.tally.outcomes, tt.outcome)
			}
			if got := v.s.book.sold(1); got != tt.sold {
				t.Fatalf("%d seats in the book; want %d", got, tt.sold)
			}
			if (tt.outcome == "RESERVED") != v.tally.lastSale.Equal(now) {
				t.Fatalf("last sale %v", v.tally.lastSale)
			}
		})
	}
}

// FuzzSpikeReply feeds arbitrary bytes to the reply handling as the reply
// to a POST and to the GET after it: it must never panic, and whatever it
// accepts as sold must be in the seat book, inside the area.
func FuzzSpikeReply(f *testing.F) {
	f.Add([]byte("r-1"), []byte(`{"reservationId":"r-1","eventId":"e-0","areaId":"1","state":"RESERVED","seats":[{"row":1,"col":1},{"row":1,"col":2}]}`), uint8(2))
	f.Add([]byte(`{"reservationId":"r-2","state":"FAILED","failedReason":"[NOT_AVAILABLE]: x"}`), []byte(nil), uint8(1))
	f.Add([]byte(`{"reservationId":"r-3","state":"PROCESSING"}`), []byte(`{"state":"RESERVED","seats":[{"row":9,"col":-1}]}`), uint8(1))
	f.Add([]byte("\x00"), []byte(`{"seats":null}`), uint8(0))
	f.Fuzz(func(t *testing.T, post, get []byte, n uint8) {
		v := newTestVU()
		id, final, err := v.postReply(post)
		if err != nil {
			return
		}
		if !validReservationID(id) {
			t.Fatalf("accepted id %q", id)
		}
		if !final {
			if v.decode(get) != nil {
				return
			}
		}
		o := v.judge(1, int(n%5), id, time.Now())
		sold := v.s.book.sold(1)
		if o.Failure == "" && v.res.State == "RESERVED" && sold != int64(len(v.res.Seats)) {
			t.Fatalf("accepted %v but %d seats are in the book", v.res.Seats, sold)
		}
		if sold > 8 {
			t.Fatalf("%d seats sold in an area of 8", sold)
		}
	})
}
