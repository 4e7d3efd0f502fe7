package tickets

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// MaxSeatsPerReservation bounds numOfSeats and the length of a SELF_PICK
// list, so a request's cost and the price × seats of its payment are bounded.
const MaxSeatsPerReservation = 50

// Reason is why a reservation failed, as a stable code. Its spelling is part
// of the API: the first four are ticket-master's error codes.
type Reason string

// Failure reasons.
const (
	// ReasonInvalidEventArea: the event or the area does not exist.
	ReasonInvalidEventArea Reason = "INVALID_EVENT_AREA"
	// ReasonInvalidSeat: a picked seat is outside the area or listed twice.
	ReasonInvalidSeat Reason = "INVALID_SEAT"
	// ReasonNotAvailable: the seats asked for are not free.
	ReasonNotAvailable Reason = "NOT_AVAILABLE"
	// ReasonInvalidArgument: the request itself is malformed.
	ReasonInvalidArgument Reason = "INVALID_ARGUMENT"
	// ReasonNotOpen: before the event's reservation opening time.
	ReasonNotOpen Reason = "NOT_OPEN"
	// ReasonClosed: at or after the event's reservation closing time.
	ReasonClosed Reason = "CLOSED"
	// ReasonSeatLimit: the user would hold more seats of the event than its
	// per-user limit.
	ReasonSeatLimit Reason = "SEAT_LIMIT"
)

// Kind is how a reservation chooses its seats.
type Kind string

// Reservation kinds, spelt as ticket-master's "type" field.
const (
	// Random asks for numOfSeats adjacent seats in one row; surge gives the
	// best available block (see Area.PickBest).
	Random Kind = "RANDOM"
	// SelfPick asks for exactly the listed seats, all or nothing.
	SelfPick Kind = "SELF_PICK"
)

// ReserveRequest is one reservation request against one area.
type ReserveRequest struct {
	// EventID and AreaID name the area in failure details only.
	EventID, AreaID string
	Kind            Kind
	// NumOfSeats is the block length for Random. For SelfPick it may be 0
	// (ticket-master ignores it there) or must equal len(Seats).
	NumOfSeats int
	// Seats are the picked seats for SelfPick; Random ignores them, as
	// ticket-master does.
	Seats []Seat
}

// Reserve validates req against the area and, if the seats are available,
// takes them: the seats taken (a copy, in column order for Random, in the
// listed order for SelfPick) and reason "". Otherwise it takes nothing and
// returns the reason with a detail worded like ticket-master's messages.
//
// Where ticket-master leaves a case open, surge decides: numOfSeats outside
// 1..MaxSeatsPerReservation is INVALID_ARGUMENT; a Random block longer than
// a row is NOT_AVAILABLE (ticket-master's answer); an empty or repeating
// SelfPick list is INVALID_ARGUMENT or INVALID_SEAT (ticket-master accepts
// both, the second counting a seat twice); a SelfPick numOfSeats that
// contradicts the list is INVALID_ARGUMENT.
func (a *Area) Reserve(req ReserveRequest) (seats []Seat, reason Reason, detail string) {
	switch req.Kind {
	case Random:
		return a.reserveRandom(req)
	case SelfPick:
		return a.reserveSelfPick(req)
	}
	return nil, ReasonInvalidArgument, fmt.Sprintf("%q reservation strategy is not implemented", req.Kind)
}

func (a *Area) reserveRandom(req ReserveRequest) ([]Seat, Reason, string) {
	n := req.NumOfSeats
	if n < 1 || n > MaxSeatsPerReservation {
		return nil, ReasonInvalidArgument, fmt.Sprintf("%d continuous seats is invalid: must be 1 to %d", n, MaxSeatsPerReservation)
	}
	seats, ok := a.PickBest(n)
	if !ok {
		return nil, ReasonNotAvailable, NoBlockDetail(n, req.EventID, req.AreaID)
	}
	a.Take(seats)
	return seats, "", ""
}

// NoBlockDetail is the detail of a RANDOM request for n seats that area
// areaID of event eventID cannot seat. It depends on nothing else, so a
// store of many failures may keep the inputs and rebuild the text.
func NoBlockDetail(n int, eventID, areaID string) string {
	// Built by concatenation, not fmt, as FailureText is: a flash sale's
	// sold-out requests build it two or three times each, and fmt.Sprintf
	// in the two showed in the server's profile of a spike.
	return "no continuous " + strconv.Itoa(n) + " seats at area " + areaID + " in event " + eventID
}

func (a *Area) reserveSelfPick(req ReserveRequest) ([]Seat, Reason, string) {
	k := len(req.Seats)
	switch {
	case k == 0:
		return nil, ReasonInvalidArgument, "no seats picked"
	case k > MaxSeatsPerReservation:
		return nil, ReasonInvalidArgument, fmt.Sprintf("%d seats picked: at most %d per reservation", k, MaxSeatsPerReservation)
	case req.NumOfSeats != 0 && req.NumOfSeats != k:
		return nil, ReasonInvalidArgument, fmt.Sprintf("numOfSeats is %d but %d seats are picked", req.NumOfSeats, k)
	}
	if reason, detail := a.CheckPick(req.Seats); reason != "" {
		return nil, reason, req.EventID + "#" + req.AreaID + " " + detail
	}
	seats := slices.Clone(req.Seats)
	a.Take(seats)
	return seats, "", ""
}

// State is where a reservation is in its life. Its spelling is part of the
// API (ticket-master's StateEnum plus EXPIRED).
type State string

// Reservation states. Processing is the only one that is not final: a
// long-poll for the reservation waits while it lasts. Reserved is the only
// final one that still changes (Settled).
const (
	// Processing: requested, not yet decided.
	Processing State = "PROCESSING"
	// Reserved: the seats are held until HoldUntil, awaiting payment.
	Reserved State = "RESERVED"
	// Failed: refused for FailedReason; it never held seats.
	Failed State = "FAILED"
	// Paid: the seats are sold. Terminal.
	Paid State = "PAID"
	// Cancelled: the holder gave the seats back before paying. Terminal.
	Cancelled State = "CANCELLED"
	// Expired: the hold ran out unpaid and the seats went back on sale.
	// Terminal.
	Expired State = "EXPIRED"
)

// Reservation is one reservation and its outcome. Its transition methods
// enforce the life cycle
//
//	PROCESSING → RESERVED | FAILED
//	RESERVED   → PAID | CANCELLED | EXPIRED
//
// and return a *TransitionError, changing nothing, for any other step.
type Reservation struct {
	ID, UserID, EventID, AreaID string
	// NumOfSeats is what was asked for (for SelfPick, the picked count).
	NumOfSeats int
	Kind       Kind
	// Seats are the picked seats while Processing or if Failed, and the
	// seats held or sold once Reserved.
	Seats []Seat
	State State
	// FailedReason and Detail say why, when State is Failed.
	FailedReason Reason
	Detail       string
	CreatedAt    time.Time
	// UpdatedAt is the time of the latest transition.
	UpdatedAt time.Time
	// HoldUntil is when an unpaid hold ends (set when Reserved).
	HoldUntil time.Time
	// PaymentID identifies the payment (set when Paid).
	PaymentID string
}

// NewReservation records request req by user as reservation id, Processing.
func NewReservation(id, userID string, req ReserveRequest, now time.Time) *Reservation {
	n := req.NumOfSeats
	if req.Kind == SelfPick {
		n = len(req.Seats)
	}
	return &Reservation{
		ID:         id,
		UserID:     userID,
		EventID:    req.EventID,
		AreaID:     req.AreaID,
		NumOfSeats: n,
		Kind:       req.Kind,
		Seats:      slices.Clone(req.Seats),
		State:      Processing,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
}

// Final reports whether the reservation has been decided (is not Processing).
func (r *Reservation) Final() bool { return r.State != Processing }

// Settled reports whether the reservation never changes again: Failed,
// Paid, Cancelled or Expired. Every transition out of these is refused
// (Decide needs Processing; Pay, Cancel and Expire need Reserved), so a
// reader that saw one settled may answer with it without asking again.
func (r *Reservation) Settled() bool {
	switch r.State {
	case Failed, Paid, Cancelled, Expired:
		return true
	}
	return false
}

// HoldsSeats reports whether the reservation's Seats are taken on its behalf
// (Reserved or Paid).
func (r *Reservation) HoldsSeats() bool { return r.State == Reserved || r.State == Paid }

// FailureText is the failure in ticket-master's failedReason format,
// "[CODE]: detail", or "" if the reservation has not failed.
func (r *Reservation) FailureText() string {
	if r.State != Failed {
		return ""
	}
	return "[" + string(r.FailedReason) + "]: " + r.Detail
}

// Sentinel errors a *TransitionError wraps, one per reason a step is refused.
var (
	// ErrUndecided: the reservation is still Processing.
	ErrUndecided = errors.New("reservation is not decided yet")
	// ErrDecided: Decide on a reservation that is already decided.
	ErrDecided = errors.New("reservation is already decided")
	// ErrFailed: the reservation failed; it holds nothing.
	ErrFailed = errors.New("reservation failed")
	// ErrPaid: the reservation is paid. For Pay it marks an idempotent
	// replay: the caller answers with the recorded PaymentID and charges
	// nothing.
	ErrPaid = errors.New("reservation is paid")
	// ErrCancelled: the reservation is cancelled. For Cancel it marks an
	// idempotent replay: nothing more to release.
	ErrCancelled = errors.New("reservation is cancelled")
	// ErrExpired: the hold has run out, whether or not Expire has run yet.
	ErrExpired = errors.New("reservation hold has expired")
	// ErrHoldActive: Expire before HoldUntil.
	ErrHoldActive = errors.New("reservation hold has not run out")
)

// Action names a transition in a TransitionError.
type Action string

// Transitions.
const (
	ActionDecide Action = "decide"
	ActionPay    Action = "pay"
	ActionCancel Action = "cancel"
	ActionExpire Action = "expire"
)

// TransitionError is a refused transition: Action on reservation ID in
// State. errors.Is matches it against the sentinel Err.
type TransitionError struct {
	ID     string
	Action Action
	State  State
	Err    error
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s reservation %s (%s): %v", e.Action, e.ID, e.State, e.Err)
}

// Unwrap returns the sentinel error.
func (e *TransitionError) Unwrap() error { return e.Err }

// Decide records the outcome of Area.Reserve at time now: reason "" makes
// the reservation Reserved with seats held until now+hold; any other reason
// makes it Failed. Only a Processing reservation can be decided.
func (r *Reservation) Decide(now time.Time, hold time.Duration, seats []Seat, reason Reason, detail string) error {
	if r.State != Processing {
		return r.refuse(ActionDecide, ErrDecided)
	}
	r.UpdatedAt = now
	if reason != "" {
		r.State, r.FailedReason, r.Detail = Failed, reason, detail
		return nil
	}
	r.State, r.Seats, r.HoldUntil = Reserved, seats, now.Add(hold)
	return nil
}

// CheckPay reports whether Pay at now would succeed: nil if the reservation
// is Reserved and its hold runs past now. A caller that must move money
// before Pay checks first, and undoes the money movement if Pay then fails.
func (r *Reservation) CheckPay(now time.Time) error {
	if err := r.heldAt(now); err != nil {
		return r.refuse(ActionPay, err)
	}
	return nil
}

// Pay marks the reservation Paid by paymentID at now. A hold is payable
// until (not at) HoldUntil. Paying a Paid reservation is refused with
// ErrPaid whatever the paymentID; the caller treats it as a replay.
func (r *Reservation) Pay(now time.Time, paymentID string) error {
	if err := r.CheckPay(now); err != nil {
		return err
	}
	r.State, r.PaymentID, r.UpdatedAt = Paid, paymentID, now
	return nil
}

// Cancel gives a Reserved hold back at now and returns the seats to release,
// even if the hold has run out and Expire has not run yet. Cancelling a
// Cancelled reservation is refused with ErrCancelled (a replay). A Paid
// reservation cannot be cancelled: surge does not refund.
func (r *Reservation) Cancel(now time.Time) ([]Seat, error) {
	if r.State != Reserved {
		return nil, r.refuse(ActionCancel, r.stateErr())
	}
	r.State, r.UpdatedAt = Cancelled, now
	return r.Seats, nil
}

// Expire ends a Reserved hold whose time has run out (now ≥ HoldUntil) and
// returns the seats to release. A stale expiry timer meets an error: the
// reservation was paid, cancelled or expired meanwhile, or (ErrHoldActive)
// its hold has not run out.
func (r *Reservation) Expire(now time.Time) ([]Seat, error) {
	if r.State != Reserved {
		return nil, r.refuse(ActionExpire, r.stateErr())
	}
	if now.Before(r.HoldUntil) {
		return nil, r.refuse(ActionExpire, ErrHoldActive)
	}
	r.State, r.UpdatedAt = Expired, now
	return r.Seats, nil
}

// heldAt returns nil if the reservation holds its seats at now, else why not.
func (r *Reservation) heldAt(now time.Time) error {
	if r.State != Reserved {
		return r.stateErr()
	}
	if !now.Before(r.HoldUntil) {
		return ErrExpired
	}
	return nil
}

// stateErr is the sentinel for a reservation that is not Reserved.
func (r *Reservation) stateErr() error {
	switch r.State {
	case Processing:
		return ErrUndecided
	case Failed:
		return ErrFailed
	case Paid:
		return ErrPaid
	case Cancelled:
		return ErrCancelled
	case Expired:
		return ErrExpired
	}
	return fmt.Errorf("unknown state %q", r.State)
}

func (r *Reservation) refuse(action Action, err error) *TransitionError {
	return &TransitionError{ID: r.ID, Action: action, State: r.State, Err: err}
}
