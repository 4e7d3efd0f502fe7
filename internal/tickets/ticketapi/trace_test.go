package ticketapi

import (
	"context"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/telemetry/otlptest"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/workloads"
)

func TestSpansAroundTicketCalls(t *testing.T) {
	rec, tp := otlptest.RecordSpans(t)
	eng, err := workloads.Open(context.Background(), workloads.Config{Engine: engine.Config{Dir: t.TempDir(), Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	box := Traced(eng.Tickets)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "GET /v1/reservation/{id}")
	spec := tickets.EventSpec{EventName: "gig", Artist: "band", Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 1}}}
	if _, _, err := box.CreateEvent(ctx, spec); err != nil {
		t.Fatal(err)
	}
	id, err := box.Reserve("u", tickets.ReserveRequest{EventID: "gig", AreaID: "A", Kind: tickets.Random, NumOfSeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := box.Reservation(ctx, id, 10*time.Second); err != nil || r.State != tickets.Reserved {
		t.Fatalf("reservation %+v, %v", r, err)
	}
	if _, err := box.CancelReservation(ctx, "not-a-reservation"); err == nil {
		t.Fatal("cancelled an unknown reservation")
	}
	parent.End()

	spans := rec.Ended()
	want := []string{"tickets.CreateEvent", "tickets.Reservation", "tickets.CancelReservation", "GET /v1/reservation/{id}"}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %v", len(spans), want)
	}
	for i, name := range want[:3] {
		if s := spans[i]; s.Name() != name || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: %q under %v, want %q under the request's span", i, s.Name(), s.Parent().SpanID(), name)
		}
	}
	if !otlptest.HasAttr(spans[1], "surge.reservation.state", string(tickets.Reserved)) {
		t.Errorf("reservation span lacks its state: %v", spans[1].Attributes())
	}
	if !otlptest.HasAttr(spans[2], "surge.code", string(tickets.CodeReservationNotFound)) {
		t.Errorf("unknown reservation's span: %v", spans[2].Attributes())
	}
}
