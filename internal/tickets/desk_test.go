package tickets

import (
	"errors"
	"testing"
	"time"
)

// deskFixture is a desk over one area of 1 row of 4 seats of event ev,
// keeping every reservation it decided, as both modes' shards do.
type deskFixture struct {
	desk *Desk
	ev   *EventSpec
	area *Area
	seen map[string]*Reservation
}

func newDeskFixture(ev *EventSpec) *deskFixture {
	f := &deskFixture{ev: ev, area: NewArea(1, 4), seen: map[string]*Reservation{}}
	f.desk = NewDesk(func(id string) (*Reservation, bool) { r, ok := f.seen[id]; return r, ok })
	return f
}

func (f *deskFixture) reserve(id string, n int, now time.Time, overLimit bool) *Reservation {
	r := NewReservation(id, "u", ReserveRequest{EventID: f.ev.EventName, AreaID: "A", Kind: Random, NumOfSeats: n}, now)
	r = f.desk.Reserve(f.ev, f.area, r, now, overLimit)
	f.seen[r.ID] = r
	return r
}

// A retried request, the same id again, is answered with its first
// decision, held or failed, and takes nothing more.
func TestDeskAnswersARetriedRequestWithItsFirstDecision(t *testing.T) {
	now := time.Now()
	f := newDeskFixture(&EventSpec{EventName: "gig", HoldTime: time.Minute})
	first := f.reserve("r1", 2, now, false)
	failed := f.reserve("r2", 3, now, false)
	if first.State != Reserved || failed.State != Failed || f.area.Free() != 2 {
		t.Fatalf("first decisions: %s %s, %d free", first.State, failed.State, f.area.Free())
	}
	f.desk.Reset()
	if again := f.reserve("r1", 2, now, false); again != first || f.area.Free() != 2 || len(f.desk.Changes()) != 0 {
		t.Fatalf("retried r1: %+v, %d free, %d changes", again, f.area.Free(), len(f.desk.Changes()))
	}
	if again := f.reserve("r2", 1, now, false); again != failed || f.area.Free() != 2 {
		t.Fatalf("retried r2: %+v, %d free", again, f.area.Free())
	}
}

// The decision's order: the sale window, then a refused seat-limit claim,
// then the seats; an unknown area fails first of all.
func TestDeskDecidesInOrder(t *testing.T) {
	now := time.Now()
	ev := &EventSpec{EventName: "gig", PerUserSeatLimit: 2, ReservationClosingTime: now.Add(time.Hour)}
	f := newDeskFixture(ev)
	if r := f.reserve("over", 9, now, true); r.FailedReason != ReasonSeatLimit || r.Detail != "at most 2 seats per user in event gig" {
		t.Fatalf("over the limit and too many seats: %+v", r)
	}
	if r := f.reserve("late", 1, now.Add(time.Hour), true); r.FailedReason != ReasonClosed {
		t.Fatalf("closed and over the limit: %+v", r)
	}
	r := NewReservation("nowhere", "u", ReserveRequest{EventID: "gig", AreaID: "Z", Kind: Random, NumOfSeats: 1}, now)
	if r = f.desk.Reserve(nil, nil, r, now, true); r.FailedReason != ReasonInvalidEventArea || r.Detail != "event gig has no area Z" {
		t.Fatalf("an unknown area: %+v", r)
	}
}

// A hold being paid neither expires nor is cancelled; thawed after its
// time it expires at once, and one paid keeps its seats.
func TestDeskFreezesAHoldWhilePaid(t *testing.T) {
	now := time.Now()
	f := newDeskFixture(&EventSpec{EventName: "gig", HoldTime: time.Minute})
	a, b := f.reserve("a", 1, now, false), f.reserve("b", 1, now, false)
	for _, id := range []string{"a", "b"} {
		if _, err := f.desk.Freeze(id, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.desk.Freeze("a", now); !errors.Is(err, ErrPaying) {
		t.Fatalf("a second payment: %v", err)
	}
	late := now.Add(2 * time.Minute)
	f.desk.Expire(late)
	if _, err := f.desk.Cancel("a", late); !errors.Is(err, ErrPaying) || a.State != Reserved || b.State != Reserved {
		t.Fatalf("while paying: %v, %s %s", err, a.State, b.State)
	}
	f.desk.Thaw("a", late)
	if _, err := f.desk.PayFrozen("b", PaymentID("b", 1), now, late); err != nil {
		t.Fatal(err)
	}
	if a.State != Expired || b.State != Paid || f.area.Free() != 3 || !f.desk.NextExpiry().IsZero() {
		t.Fatalf("after the payments: %s %s, %d free, next expiry %v", a.State, b.State, f.area.Free(), f.desk.NextExpiry())
	}
}
