package dashboard

import (
	"context"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/workloads"
)

func TestTicketEventsFromEngine(t *testing.T) {
	eng, err := workloads.Open(context.Background(), workloads.Config{Engine: engine.Config{Dir: t.TempDir(), Shards: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	opens := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	for _, name := range []string{"zither", "aria"} {
		spec := tickets.EventSpec{EventName: name, Artist: "band", ReservationOpeningTime: opens,
			Areas: []tickets.AreaSpec{{AreaID: "A", Price: 1, RowCount: 1, ColCount: 2}, {AreaID: "B", Price: 1, RowCount: 2, ColCount: 3}}}
		if _, _, err := eng.Tickets.CreateEvent(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	// Sell out area A of aria: the event is not sold out while B has seats.
	id, err := eng.Tickets.Reserve("u1", tickets.ReserveRequest{EventID: "aria", AreaID: "A", Kind: tickets.Random, NumOfSeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := eng.Tickets.Reservation(ctx, id, 10*time.Second); err != nil || r.State != tickets.Reserved {
		t.Fatalf("reservation %+v, %v", r, err)
	}

	got := TicketEvents{Source: eng.Tickets}.Events()
	if len(got) != 2 || got[0].Name != "aria" || got[1].Name != "zither" {
		t.Fatalf("events %+v, want aria then zither", got)
	}
	aria := got[0]
	if !aria.OpensAt.Equal(opens) || aria.SoldOutAt != nil || len(aria.Areas) != 2 {
		t.Fatalf("aria %+v", aria)
	}
	if a := aria.Areas[0]; a.ID != "A" || a.Rows != 1 || a.Cols != 2 || a.Sold != 2 || a.Available != 0 {
		t.Errorf("area A %+v", a)
	}
	if b := aria.Areas[1]; b.ID != "B" || b.Sold != 0 || b.Available != 6 {
		t.Errorf("area B %+v", b)
	}

	for range 2 { // a row of three each
		id, err := eng.Tickets.Reserve("u2", tickets.ReserveRequest{EventID: "aria", AreaID: "B", Kind: tickets.Random, NumOfSeats: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Tickets.Reservation(ctx, id, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	aria = TicketEvents{Source: eng.Tickets}.Events()[0]
	if aria.SoldOutAt == nil || aria.SoldOutAt.Before(opens) {
		t.Errorf("aria after selling every seat: sold out at %v", aria.SoldOutAt)
	}
}
