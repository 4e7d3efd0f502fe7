package dashboard

import (
	"cmp"
	"slices"
	"time"

	"github.com/surge-dev/surge/internal/tickets"
)

// TicketEvents is the ticketing workload's EventSource: it reads the
// engine's published availability, which costs no shard any work.
type TicketEvents struct {
	Source interface{ Events() []tickets.EventStatus }
}

// Events returns every event, by name, with its areas in their order.
// Seats held by an unpaid reservation count as sold: they are off sale.
func (t TicketEvents) Events() []EventSnapshot {
	events := t.Source.Events()
	out := make([]EventSnapshot, len(events))
	for i, ev := range events {
		snap := EventSnapshot{Name: ev.Spec.EventName, OpensAt: ev.Spec.ReservationOpeningTime, Areas: make([]AreaSnapshot, len(ev.Areas))}
		if !ev.SoldOutAt.IsZero() {
			snap.SoldOutAt = new(time.Time)
			*snap.SoldOutAt = ev.SoldOutAt
		}
		for j, a := range ev.Areas {
			seats := a.Spec.RowCount * a.Spec.ColCount
			snap.Areas[j] = AreaSnapshot{ID: a.Spec.AreaID, Rows: a.Spec.RowCount, Cols: a.Spec.ColCount, Available: a.Available, Sold: seats - a.Available}
		}
		out[i] = snap
	}
	slices.SortFunc(out, func(a, b EventSnapshot) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
