package tickets

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

const hold = 10 * time.Minute

// reservationIn returns a reservation of two seats brought to state at t0
// (its hold, if any, running until t0+hold).
func reservationIn(t *testing.T, state State) *Reservation {
	t.Helper()
	r := NewReservation("r-1", "u-1", ReserveRequest{EventID: "e", AreaID: "A", Kind: Random, NumOfSeats: 2}, t0)
	var err error
	switch state {
	case Processing:
	case Failed:
		err = r.Decide(t0, hold, nil, ReasonNotAvailable, "no continuous 2 seats at area A in event e")
	default:
		err = r.Decide(t0, hold, seatsOf("0,4 0,5"), "", "")
	}
	if err == nil {
		switch state {
		case Paid:
			err = r.Pay(t0, "pay-1")
		case Cancelled:
			_, err = r.Cancel(t0)
		case Expired:
			_, err = r.Expire(t0.Add(hold))
		}
	}
	if err != nil || r.State != state {
		t.Fatalf("cannot bring a reservation to %s: %v (it is %s)", state, err, r.State)
	}
	return r
}

func TestNewReservation(t *testing.T) {
	picked := seatsOf("1,1 1,2 1,3")
	r := NewReservation("r-1", "u-1", ReserveRequest{EventID: "e", AreaID: "A", Kind: SelfPick, Seats: picked}, t0)
	want := Reservation{ID: "r-1", UserID: "u-1", EventID: "e", AreaID: "A", NumOfSeats: 3, Kind: SelfPick,
		Seats: seatsOf("1,1 1,2 1,3"), State: Processing, CreatedAt: t0, UpdatedAt: t0}
	if !reflect.DeepEqual(*r, want) {
		t.Fatalf("NewReservation = %+v; want %+v", *r, want)
	}
	picked[0] = Seat{9, 9}
	if r.Seats[0] != (Seat{1, 1}) {
		t.Fatal("the reservation aliases the request's seats")
	}
	if r.Final() || r.HoldsSeats() || r.FailureText() != "" {
		t.Fatalf("a new reservation: Final %v, HoldsSeats %v, FailureText %q", r.Final(), r.HoldsSeats(), r.FailureText())
	}
}

func TestDecide(t *testing.T) {
	r := reservationIn(t, Processing)
	if err := r.Decide(t0.Add(time.Second), hold, seatsOf("0,4 0,5"), "", ""); err != nil {
		t.Fatal(err)
	}
	if r.State != Reserved || !slices.Equal(r.Seats, seatsOf("0,4 0,5")) || !r.HoldUntil.Equal(t0.Add(time.Second+hold)) ||
		!r.UpdatedAt.Equal(t0.Add(time.Second)) || !r.Final() || !r.HoldsSeats() {
		t.Fatalf("after Decide: %+v", *r)
	}

	f := reservationIn(t, Processing)
	if err := f.Decide(t0, hold, nil, ReasonNotAvailable, "no continuous 2 seats at area A in event e"); err != nil {
		t.Fatal(err)
	}
	if f.State != Failed || f.FailedReason != ReasonNotAvailable || !f.HoldUntil.IsZero() || !f.Final() || f.HoldsSeats() {
		t.Fatalf("after a failed Decide: %+v", *f)
	}
	if got, want := f.FailureText(), "[NOT_AVAILABLE]: no continuous 2 seats at area A in event e"; got != want {
		t.Fatalf("FailureText() = %q; want %q", got, want)
	}
}

// TestTransitions tries every action in every state: each either moves the
// reservation as the life cycle allows or is refused with the expected
// sentinel, changing nothing.
func TestTransitions(t *testing.T) {
	before, at, after := t0.Add(hold-time.Nanosecond), t0.Add(hold), t0.Add(2*hold)
	type action struct {
		name string
		do   func(r *Reservation) ([]Seat, error)
	}
	pay := func(now time.Time) action {
		return action{"pay at " + now.Sub(t0).String(), func(r *Reservation) ([]Seat, error) { return nil, r.Pay(now, "pay-2") }}
	}
	cancel := func(now time.Time) action {
		return action{"cancel at " + now.Sub(t0).String(), func(r *Reservation) ([]Seat, error) { return r.Cancel(now) }}
	}
	expire := func(now time.Time) action {
		return action{"expire at " + now.Sub(t0).String(), func(r *Reservation) ([]Seat, error) { return r.Expire(now) }}
	}
	decide := action{"decide", func(r *Reservation) ([]Seat, error) {
		return nil, r.Decide(t0, hold, seatsOf("1,1"), "", "")
	}}
	held := seatsOf("0,4 0,5")
	tests := []struct {
		from     State
		act      action
		to       State
		err      error
		released []Seat
	}{
		{Processing, pay(before), Processing, ErrUndecided, nil},
		{Processing, cancel(before), Processing, ErrUndecided, nil},
		{Processing, expire(after), Processing, ErrUndecided, nil},

		{Reserved, decide, Reserved, ErrDecided, nil},
		{Reserved, pay(before), Paid, nil, nil},
		{Reserved, pay(at), Reserved, ErrExpired, nil},
		{Reserved, pay(after), Reserved, ErrExpired, nil},
		{Reserved, cancel(before), Cancelled, nil, held},
		{Reserved, cancel(after), Cancelled, nil, held},
		{Reserved, expire(before), Reserved, ErrHoldActive, nil},
		{Reserved, expire(at), Expired, nil, held},
		{Reserved, expire(after), Expired, nil, held},

		{Failed, decide, Failed, ErrDecided, nil},
		{Failed, pay(before), Failed, ErrFailed, nil},
		{Failed, cancel(before), Failed, ErrFailed, nil},
		{Failed, expire(after), Failed, ErrFailed, nil},

		{Paid, decide, Paid, ErrDecided, nil},
		{Paid, pay(before), Paid, ErrPaid, nil},
		{Paid, cancel(before), Paid, ErrPaid, nil},
		{Paid, expire(after), Paid, ErrPaid, nil},

		{Cancelled, pay(before), Cancelled, ErrCancelled, nil},
		{Cancelled, cancel(before), Cancelled, ErrCancelled, nil},
		{Cancelled, expire(after), Cancelled, ErrCancelled, nil},

		{Expired, pay(after), Expired, ErrExpired, nil},
		{Expired, cancel(after), Expired, ErrExpired, nil},
		{Expired, expire(after), Expired, ErrExpired, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+" "+tt.act.name, func(t *testing.T) {
			r := reservationIn(t, tt.from)
			was := *r
			released, err := tt.act.do(r)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("error %v; want %v", err, tt.err)
			}
			if r.State != tt.to || !slices.Equal(released, tt.released) {
				t.Fatalf("state %s, released %v; want %s, %v", r.State, released, tt.to, tt.released)
			}
			if err != nil {
				var te *TransitionError
				if !errors.As(err, &te) || te.ID != "r-1" || te.State != tt.from {
					t.Fatalf("error %#v is not a TransitionError for r-1 in %s", err, tt.from)
				}
				if !reflect.DeepEqual(*r, was) {
					t.Fatalf("a refused transition changed the reservation: %+v → %+v", was, *r)
				}
			}
		})
	}
}

func TestPayRecordsPayment(t *testing.T) {
	r := reservationIn(t, Reserved)
	now := t0.Add(time.Minute)
	if err := r.CheckPay(now); err != nil {
		t.Fatalf("CheckPay: %v", err)
	}
	if r.State != Reserved {
		t.Fatal("CheckPay changed the state")
	}
	if err := r.Pay(now, "pay-1"); err != nil {
		t.Fatal(err)
	}
	if r.State != Paid || r.PaymentID != "pay-1" || !r.UpdatedAt.Equal(now) || !r.HoldsSeats() {
		t.Fatalf("after Pay: %+v", *r)
	}
	// A replay with another payment id keeps the first.
	err := r.Pay(now, "pay-2")
	if !errors.Is(err, ErrPaid) || r.PaymentID != "pay-1" {
		t.Fatalf("second Pay: %v, payment %q", err, r.PaymentID)
	}
	if got, want := err.Error(), "cannot pay reservation r-1 (PAID): reservation is paid"; got != want {
		t.Fatalf("error text %q; want %q", got, want)
	}
}

func TestCancelAndExpireRecordTime(t *testing.T) {
	c := reservationIn(t, Reserved)
	if _, err := c.Cancel(t0.Add(time.Minute)); err != nil || !c.UpdatedAt.Equal(t0.Add(time.Minute)) || c.HoldsSeats() {
		t.Fatalf("Cancel: %v, %+v", err, *c)
	}
	e := reservationIn(t, Reserved)
	if _, err := e.Expire(t0.Add(hold + time.Minute)); err != nil || !e.UpdatedAt.Equal(t0.Add(hold+time.Minute)) || e.HoldsSeats() {
		t.Fatalf("Expire: %v, %+v", err, *e)
	}
}

// TestSettledNeverChanges checks Settled against the life cycle: in every
// state it calls settled, each transition at any time is refused and
// leaves the reservation as it was; in the other two, one of them moves it.
func TestSettledNeverChanges(t *testing.T) {
	times := []time.Time{t0, t0.Add(hold - time.Nanosecond), t0.Add(hold), t0.Add(2 * hold)}
	var actions []func(r *Reservation) error
	for _, now := range times {
		actions = append(actions,
			func(r *Reservation) error { return r.Decide(now, hold, seatsOf("1,1"), "", "") },
			func(r *Reservation) error { return r.Decide(now, hold, nil, ReasonNotAvailable, "none") },
			func(r *Reservation) error { return r.Pay(now, "pay-2") },
			func(r *Reservation) error { _, err := r.Cancel(now); return err },
			func(r *Reservation) error { _, err := r.Expire(now); return err },
		)
	}
	want := map[State]bool{Processing: false, Reserved: false, Failed: true, Paid: true, Cancelled: true, Expired: true}
	for state, settled := range want {
		if got := reservationIn(t, state).Settled(); got != settled {
			t.Fatalf("%s: Settled() = %v; want %v", state, got, settled)
		}
		moved := false
		for i, act := range actions {
			r := reservationIn(t, state)
			was := *r
			err := act(r)
			changed := !reflect.DeepEqual(*r, was)
			moved = moved || changed
			if settled && (err == nil || changed) {
				t.Fatalf("%s, action %d: error %v, %+v → %+v", state, i, err, was, *r)
			}
		}
		if !settled && !moved {
			t.Fatalf("%s is not settled, but no transition moved it", state)
		}
	}
}
