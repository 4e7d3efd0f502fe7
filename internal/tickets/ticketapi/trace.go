package ticketapi

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets"
)

// Traced returns next with its calls that take a context traced: event
// creation, seat maps, the reservation long-poll (its span is the wait for
// the decision), payment and cancellation. Reserve and Event take none, so
// they show in the request's server span only. Wrap it only when tracing
// is on.
func Traced(next Box) Box { return tracedBox{next} }

type tracedBox struct{ Box }

func (b tracedBox) CreateEvent(ctx context.Context, spec tickets.EventSpec) (tickets.EventSpec, bool, error) {
	ctx, span := telemetry.StartSpan(ctx, "tickets.CreateEvent", attribute.String("surge.event", spec.EventName))
	ev, created, err := b.Box.CreateEvent(ctx, spec)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return ev, created, err
}

func (b tracedBox) InspectArea(ctx context.Context, event, area string) (tickets.AreaSeats, error) {
	ctx, span := telemetry.StartSpan(ctx, "tickets.InspectArea", attribute.String("surge.event", event), attribute.String("surge.area", area))
	seats, err := b.Box.InspectArea(ctx, event, area)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return seats, err
}

func (b tracedBox) Reservation(ctx context.Context, id string, timeout time.Duration) (tickets.Reservation, error) {
	ctx, span := telemetry.StartSpan(ctx, "tickets.Reservation", attribute.String("surge.reservation", id))
	r, err := b.Box.Reservation(ctx, id, timeout)
	span.SetAttributes(attribute.String("surge.reservation.state", string(r.State)))
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return r, err
}

func (b tracedBox) PayReservation(ctx context.Context, id, account string) (tickets.Reservation, error) {
	ctx, span := telemetry.StartSpan(ctx, "tickets.PayReservation", attribute.String("surge.reservation", id))
	r, err := b.Box.PayReservation(ctx, id, account)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return r, err
}

func (b tracedBox) CancelReservation(ctx context.Context, id string) (tickets.Reservation, error) {
	ctx, span := telemetry.StartSpan(ctx, "tickets.CancelReservation", attribute.String("surge.reservation", id))
	r, err := b.Box.CancelReservation(ctx, id)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return r, err
}
