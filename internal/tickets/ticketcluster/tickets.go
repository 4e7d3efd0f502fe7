// Package ticketcluster is ticketing as the clients of a surge cluster node
// see it (docs/CLUSTER.md): each call is a ticketengine command to the
// partition of its event, area or reservation, whose owner runs
// ticketengine's cluster slices.
package ticketcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgercluster"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// Tickets is ticketing as a node's clients see it (ticketapi.Box): each
// call is a ticketengine command to the partition of its event, area or
// reservation, whose owner runs ticketengine's cluster slices; paying and
// reserving in an event with a per-user seat limit go on from there as
// chains of commands (ticketengine/cluster_pay.go, cluster_limit.go).
type Tickets struct {
	k          *calls.Caller
	ledger     *ledgercluster.Ledger
	partitions int
	// limits are the per-user seat limits of events, learnt from the
	// answers of their reservations (an event never changes), so that a
	// reservation in a limited event goes to its user's partition first.
	limits sync.Map
	// settled are reservations this node saw settled (settled.go).
	settled *settled
}

// do sends c to the partition of key and decodes its outcome into c.
func (t *Tickets) do(ctx context.Context, key string, c ticketengine.Command) error {
	return t.send(ctx, key, c, c)
}

// send sends c to the partition of key and decodes the answer into
// answer: c's outcome, or (for a claim a node sends) the outcome of the
// reservation it leads to.
func (t *Tickets) send(ctx context.Context, key string, c, answer ticketengine.Command) error {
	b, err := t.k.Call(ctx, engine.ShardIndex(key, t.partitions), ticketengine.AppendEncode(calls.Command(calls.WorkloadTickets), c), calls.EffectOf(c.Op().ReadOnly()))
	if err != nil {
		return ledger.Errorf(ledger.CodeOverloaded, "cluster: ticketing operation %d did not answer: %v", c.Op(), err)
	}
	if err := ticketengine.DecodeOutcome(answer, b); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
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
		if currency, err = t.ledger.CurrencyOf(ctx, spec.Organizer); err != nil {
			return tickets.EventSpec{}, false, err
		}
	}
	c := &ticketengine.CreateEvent{Spec: spec}
	switch err := t.do(ctx, spec.EventName, c); {
	case err != nil:
		return tickets.EventSpec{}, false, err
	case c.Conflict:
		return tickets.EventSpec{}, false, ledger.Errorf(tickets.CodeEventExists, "event %s exists with other settings", spec.EventName)
	}
	errs := make([]error, len(spec.Areas))
	var wg sync.WaitGroup
	for i, a := range spec.Areas {
		wg.Go(func() {
			errs[i] = t.do(ctx, tickets.AreaKey(spec.EventName, a.AreaID), &ticketengine.CreateArea{Spec: spec, Area: a.AreaID, Currency: currency})
		})
	}
	wg.Wait()
	return spec, c.Created, errors.Join(errs...)
}

// Event returns an event and each area's availability.
func (t *Tickets) Event(name string) (tickets.EventStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), calls.Timeout)
	defer cancel()
	ev := &ticketengine.ReadEvent{Name: name}
	if err := t.do(ctx, name, ev); err != nil {
		return tickets.EventStatus{}, err
	}
	if ev.Spec == nil {
		return tickets.EventStatus{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s not found", name)
	}
	st := tickets.EventStatus{Spec: *ev.Spec, Areas: make([]tickets.AreaStatus, len(ev.Spec.Areas))}
	soldOut := len(st.Areas) > 0
	for i, a := range ev.Spec.Areas {
		free := &ticketengine.AreaFree{Event: name, Area: a.AreaID}
		if err := t.do(ctx, tickets.AreaKey(name, a.AreaID), free); err != nil {
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
// event known to be limited, its user's partition first); the id returned
// names a decided reservation.
func (t *Tickets) Reserve(userID string, req tickets.ReserveRequest) (string, error) {
	key := tickets.AreaKey(req.EventID, req.AreaID)
	id := ReservationID(engine.ShardIndex(key, t.partitions), t.partitions)
	res := &ticketengine.Reserve{ID: id, User: userID, Req: req}
	var c ticketengine.Command = res
	if limit, ok := t.limits.Load(req.EventID); ok {
		c, key = &ticketengine.Claim{ID: id, User: userID, Req: req, Limit: limit.(int)}, ticketengine.LimitKey(req.EventID, userID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), calls.Timeout)
	defer cancel()
	if err := t.send(ctx, key, c, res); err != nil {
		return "", err
	}
	t.settled.learn(res.Reservation)
	if res.Limit > 0 {
		t.limits.Store(req.EventID, res.Limit)
	}
	return id, nil
}

// ReservationID returns a random id that hashes to partition: about
// partitions draws.
func ReservationID(partition, partitions int) string {
	for {
		if id := uuid.NewString(); engine.ShardIndex(id, partitions) == partition {
			return id
		}
	}
}

// Reservation reads a reservation: one this node saw settled from
// memory, any other from its partition. It is decided as soon as it
// exists, so no wait is needed.
func (t *Tickets) Reservation(ctx context.Context, id string, _ time.Duration) (tickets.Reservation, error) {
	if r, ok := t.settled.recall(id); ok {
		return r, nil
	}
	c := &ticketengine.ReadReservation{ID: id}
	if err := t.do(ctx, id, c); err != nil {
		return tickets.Reservation{}, err
	}
	t.settled.learn(c.Reservation)
	if c.Reservation == nil {
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	}
	return *c.Reservation, nil
}

// InspectArea reads an area's seat map and holders from its partition.
func (t *Tickets) InspectArea(ctx context.Context, event, area string) (tickets.AreaSeats, error) {
	c := &ticketengine.Inspect{Event: event, Area: area}
	if err := t.do(ctx, tickets.AreaKey(event, area), c); err != nil {
		return tickets.AreaSeats{}, err
	}
	if c.Seats == nil {
		return tickets.AreaSeats{}, ledger.Errorf(tickets.CodeEventNotFound, "event %s has no area %s", event, area)
	}
	return *c.Seats, nil
}

// PayReservation pays a reserved hold from account to the event's
// organizer (ticketengine/cluster_pay.go) and returns the reservation
// PAID; paying a paid reservation returns it as it is.
func (t *Tickets) PayReservation(ctx context.Context, id, account string) (tickets.Reservation, error) {
	c := &ticketengine.Pay{ID: id, Account: account}
	err := t.do(ctx, id, c)
	if err == nil {
		t.settled.learn(c.Reservation)
	}
	if err == nil && c.Fault != "" {
		err = errors.New("cluster: paying: " + c.Fault)
	}
	return heldOutcome(id, c.Reservation, c.Err, err)
}

// CancelReservation cancels a held reservation in its partition; a
// cancelled one is returned as it is (a replay).
func (t *Tickets) CancelReservation(ctx context.Context, id string) (tickets.Reservation, error) {
	c := &ticketengine.Cancel{ID: id}
	err := t.do(ctx, id, c)
	if err == nil {
		t.settled.learn(c.Reservation)
	}
	return heldOutcome(id, c.Reservation, c.Err, err)
}

// heldOutcome is the answer to a pay or a cancel of reservation id: the
// reservation, and why the step was refused if it was.
func heldOutcome(id string, r *tickets.Reservation, refused *ledger.Error, err error) (tickets.Reservation, error) {
	switch {
	case err != nil && r == nil:
		return tickets.Reservation{}, err
	case r == nil:
		return tickets.Reservation{}, ledger.Errorf(tickets.CodeReservationNotFound, "reservation %s not found", id)
	case refused != nil:
		return *r, refused
	}
	return *r, err
}

// HoldSecret returns the cluster's hold secret, which signs reservations'
// hold tokens on every node: the first secret proposed is kept.
func (t *Tickets) HoldSecret(ctx context.Context, proposed []byte) ([]byte, error) {
	c := &ticketengine.HoldSecret{Proposed: proposed}
	if err := t.do(ctx, ticketengine.HoldSecretKey, c); err != nil {
		return nil, err
	}
	return c.Secret, nil
}

// New is ticketing over calls sent with k to a cluster of partitions;
// ledger finds the organizers' currencies.
func New(k *calls.Caller, ledger *ledgercluster.Ledger, partitions int) *Tickets {
	return &Tickets{k: k, ledger: ledger, partitions: partitions, settled: newSettled(Remembered)}
}
