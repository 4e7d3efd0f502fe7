package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
)

// Tickets is ticketing as a node's clients see it (ticketapi.Box): each
// call is a command to the partition of its event, area or reservation;
// paying and reserving in an event with a per-user seat limit go on from
// there as chains of commands (tickets_chain.go).
type Tickets struct {
	k          *caller
	ledger     *Ledger
	partitions int
	// limits are the per-user seat limits of events, learnt from the
	// answers of their reservations (an event never changes), so that a
	// reservation in a limited event goes to its user's partition first.
	limits sync.Map
}

func (t *Tickets) do(ctx context.Context, key string, c *ticketCommand) (*ticketCommand, error) {
	out := &ticketCommand{}
	if err := t.k.callJSON(ctx, engine.ShardIndex(key, t.partitions), workloadTickets, c, out); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, ledger.Errorf(ledger.CodeOverloaded, "cluster: %s did not answer: %v", c.Op, err)
		}
		return nil, err
	}
	return out, nil
}

// CreateEvent records the event in its name's partition, then each area
// in its own; created is false for a replay of an identical event.
func (t *Tickets) CreateEvent(ctx context.Context, spec tickets.EventSpec) (tickets.EventSpec, bool, error) {
	if err := spec.Validate(); err != nil {
		return tickets.EventSpec{}, false, err
	}
	var currency string // the organizer's, which its areas' payments need
	if spec.Organizer != "" {
		var err error
		if currency, err = t.ledger.currencyOf(ctx, spec.Organizer); err != nil {
			return tickets.EventSpec{}, false, err
		}
	}
	out, err := t.do(ctx, spec.EventName, &ticketCommand{Op: tkCreateEvent, Event: &spec})
	switch {
	case err != nil:
		return tickets.EventSpec{}, false, err
	case out.Conflict:
		return tickets.EventSpec{}, false, ledger.Errorf(tickets.CodeEventExists, "event %s exists with other settings", spec.EventName)
	}
	errs := make([]error, len(spec.Areas))
	var wg sync.WaitGroup
	for i, a := range spec.Areas {
		wg.Go(func() {
			_, errs[i] = t.do(ctx, tickets.AreaKey(spec.EventName, a.AreaID), &ticketCommand{Op: tkCreateArea, Event: &spec, AreaID: a.AreaID, Currency: currency})
		})
	}
	wg.Wait()
	return spec, out.Created, errors.Join(errs...)
}

// Event returns an event and each area's availability.
func (t *Tickets) Event(name string) (tickets.EventStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out, err := t.do(ctx, name, &ticketCommand{Op: tkGetEvent, ID: name})
	if err != nil {
		return tickets.EventStatus{}, err
	}
	if !out.Found {
		return tickets.EventStatus{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s not found", name)
	}
	st := tickets.EventStatus{Spec: *out.Event, Areas: make([]tickets.AreaStatus, len(out.Event.Areas))}
	soldOut := len(st.Areas) > 0
	for i, a := range out.Event.Areas {
		key := tickets.AreaKey(name, a.AreaID)
		free, err := t.do(ctx, key, &ticketCommand{Op: tkAreaFree, ID: key})
		if err != nil {
			return tickets.EventStatus{}, err
		}
		st.Areas[i] = tickets.AreaStatus{Spec: a, Available: free.Free, SoldOutAt: free.SoldOutAt}
		soldOut = soldOut && !free.SoldOutAt.IsZero()
		if free.SoldOutAt.After(st.SoldOutAt) {
			st.SoldOutAt = free.SoldOutAt
		}
	}
	if !soldOut {
		st.SoldOutAt = time.Time{}
	}
	return st, nil
}

// Reserve files and decides a reservation in its area's partition (in an
// event known to be limited, its user's partition first: tickets_limit.go);
// the id returned names a decided reservation.
func (t *Tickets) Reserve(userID string, req tickets.ReserveRequest) (string, error) {
	key := tickets.AreaKey(req.EventID, req.AreaID)
	id := reservationID(engine.ShardIndex(key, t.partitions), t.partitions)
	c := &ticketCommand{Op: tkReserve, ID: id, User: userID, Req: &req}
	if limit, ok := t.limits.Load(req.EventID); ok {
		c.Op, c.Limit, key = tkClaim, limit.(int), limitKey(req.EventID, userID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out, err := t.do(ctx, key, c)
	if err != nil {
		return "", err
	}
	if out.Limit > 0 {
		t.limits.Store(req.EventID, out.Limit)
	}
	return id, nil
}

// reservationID returns a random id that hashes to partition: about
// partitions draws.
func reservationID(partition, partitions int) string {
	for {
		if id := uuid.NewString(); engine.ShardIndex(id, partitions) == partition {
			return id
		}
	}
}

// Reservation reads a reservation from its partition; it is decided as
// soon as it exists, so no wait is needed.
func (t *Tickets) Reservation(ctx context.Context, id string, _ time.Duration) (tickets.Reservation, error) {
	out, err := t.do(ctx, id, &ticketCommand{Op: tkGet, ID: id})
	if err != nil {
		return tickets.Reservation{}, err
	}
	if out.Reservation == nil {
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	}
	return *out.Reservation, nil
}

// InspectArea reads an area's seat map and holders from its partition.
func (t *Tickets) InspectArea(ctx context.Context, event, area string) (tickets.AreaSeats, error) {
	key := tickets.AreaKey(event, area)
	out, err := t.do(ctx, key, &ticketCommand{Op: tkInspect, ID: key})
	if err != nil {
		return tickets.AreaSeats{}, err
	}
	if out.Seats == nil {
		return tickets.AreaSeats{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s has no area %s", event, area)
	}
	return *out.Seats, nil
}

// PayReservation pays a reserved hold from account to the event's
// organizer (tickets_pay.go) and returns the reservation PAID; paying a
// paid reservation returns it as it is.
func (t *Tickets) PayReservation(ctx context.Context, id, account string) (tickets.Reservation, error) {
	out, err := t.do(ctx, id, &ticketCommand{Op: tkPay, ID: id, Account: account})
	return heldOutcome(id, out, err)
}

// CancelReservation cancels a held reservation in its partition; a
// cancelled one is returned as it is (a replay).
func (t *Tickets) CancelReservation(ctx context.Context, id string) (tickets.Reservation, error) {
	out, err := t.do(ctx, id, &ticketCommand{Op: tkCancel, ID: id})
	return heldOutcome(id, out, err)
}

// heldOutcome is the answer to a pay or a cancel of reservation id: the
// reservation, and why the step was refused if it was.
func heldOutcome(id string, out *ticketCommand, err error) (tickets.Reservation, error) {
	switch {
	case err != nil:
		return tickets.Reservation{}, err
	case out.Reservation == nil:
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	case out.Err != nil:
		return *out.Reservation, out.Err
	case out.Fault != "":
		return *out.Reservation, errors.New("cluster: paying: " + out.Fault)
	}
	return *out.Reservation, nil
}

// HoldSecret returns the cluster's hold secret, which signs reservations'
// hold tokens on every node: the first secret proposed is kept.
func (t *Tickets) HoldSecret(ctx context.Context, proposed []byte) ([]byte, error) {
	out, err := t.do(ctx, holdSecretKey, &ticketCommand{Op: tkSecret, Secret: proposed})
	if err != nil {
		return nil, err
	}
	return out.Secret, nil
}
