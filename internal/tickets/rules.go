package tickets

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// The rules a reservation meets beyond its area's seats: where an area
// lives, the per-user seat limit, and what paying costs. Both modes apply
// these, single process (ticketengine) and cluster (ticketengine's
// cluster slice), so a rule changed here changes in both.

// AreaKey is an area's sharding key: all of an area's seats belong to one
// shard (one partition in a cluster), which serialises their allocation.
func AreaKey(event, area string) string { return event + "\x00" + area }

// Area returns the spec of the event's area id.
func (s *EventSpec) Area(id string) (AreaSpec, bool) {
	for _, a := range s.Areas {
		if a.AreaID == id {
			return a, true
		}
	}
	return AreaSpec{}, false
}

// NoAreaDetail is the detail of a reservation in an area the event does
// not have (or of an event that does not exist).
func NoAreaDetail(event, area string) string {
	return "event " + event + " has no area " + area
}

// SeatsAsked is what the reservation counts against its user's seat limit
// (a SELF_PICK its listed seats); a negative count, which fails as
// INVALID_ARGUMENT, claims nothing.
func (r *Reservation) SeatsAsked() int { return max(r.NumOfSeats, 0) }

// SeatClaims are the seats one user holds, or asked for and is being
// decided, in an event with a per-user seat limit, by reservation. A
// reservation claims its seats before it is decided and gives them back
// when it stops holding seats, so that concurrent requests of one user
// cannot together pass the limit. Claims are keyed by reservation, so a
// claim or a release applied twice counts once.
type SeatClaims struct {
	Held  int
	ByRes map[string]int
}

// Claim claims r's seats under ev's limit: reason "" if granted (a claim
// made already for r is granted again), else SEAT_LIMIT with its detail.
func (u *SeatClaims) Claim(ev *EventSpec, r *Reservation) (Reason, string) {
	if _, ok := u.ByRes[r.ID]; ok {
		return "", ""
	}
	n := r.SeatsAsked()
	if reason, detail := ev.CheckSeatLimit(u.Held, n); reason != "" {
		return reason, detail
	}
	if u.ByRes == nil {
		u.ByRes = make(map[string]int)
	}
	u.Held += n
	u.ByRes[r.ID] = n
	return "", ""
}

// Load counts the seats of r, a stored reservation that holds them, on
// restart.
func (u *SeatClaims) Load(r *Reservation) {
	if u.ByRes == nil {
		u.ByRes = make(map[string]int)
	}
	if _, ok := u.ByRes[r.ID]; !ok {
		u.Held += len(r.Seats)
		u.ByRes[r.ID] = len(r.Seats)
	}
}

// Release gives reservation id's claim back; false if it had none.
func (u *SeatClaims) Release(id string) bool {
	n, ok := u.ByRes[id]
	if !ok {
		return false
	}
	u.Held -= n
	delete(u.ByRes, id)
	return true
}

// Empty reports whether the user claims nothing.
func (u *SeatClaims) Empty() bool { return len(u.ByRes) == 0 }

// CheckSeatLimit says whether a user who holds held seats of the event may
// reserve requested more: reason "" if so, SEAT_LIMIT if that would pass
// PerUserSeatLimit.
func (s *EventSpec) CheckSeatLimit(held, requested int) (reason Reason, detail string) {
	if s.PerUserSeatLimit == 0 || held+requested <= s.PerUserSeatLimit {
		return "", ""
	}
	return ReasonSeatLimit, "at most " + strconv.Itoa(s.PerUserSeatLimit) + " seats per user in event " + s.EventName
}

// PaymentID is the id of the ledger transfer of a reservation's payment
// attempt, "pay-<reservation id>-<attempt>": every attempt moves money
// under an id of its own, so a refused or voided attempt never stands in
// for a later one.
func PaymentID(reservation string, attempt uint32) string {
	return fmt.Sprintf("%s%s-%08x", ledger.PaymentPrefix, reservation, attempt)
}

// Charge is what paying reservation r of event ev at now costs: the area's
// price × the seats, to ev.Organizer. The error, code
// reservation_not_held, says why r cannot be paid: its state or hold, or an
// event that takes no payments.
func Charge(ev *EventSpec, r *Reservation, now time.Time) (int64, error) {
	if err := r.CheckPay(now); err != nil {
		return 0, ledger.Errorf(CodeNotPayable, "%v", err)
	}
	if ev.Organizer == "" {
		return 0, ledger.Errorf(CodeNotPayable, "event %s takes no payments (no organizer account)", ev.EventName)
	}
	a, _ := ev.Area(r.AreaID) // a reservation that holds seats is in one of ev's areas
	return a.Price * int64(len(r.Seats)), nil
}

// Refusal is the API error for a pay or a cancel the desk refused with
// err, for reservation r as it stands (ErrUnknown: it holds no seats).
func Refusal(r *Reservation, err error) *ledger.Error {
	if errors.Is(err, ErrUnknown) {
		return ledger.Errorf(CodeNotPayable, "reservation %s is %s and holds no seats", r.ID, r.State)
	}
	return ledger.Errorf(CodeNotPayable, "%v", err)
}
