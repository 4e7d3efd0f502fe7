package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/tickets/ticketcluster"
)

// getReservation answers GET /v1/reservation/{id} with box behind
// ticketapi's route, as a client sees it: status, content type and body.
func getReservation(box ticketapi.Box, id string) string {
	api := ticketapi.New(box, ticketapi.Options{HoldSecret: []byte("secret"), Logger: slog.New(slog.DiscardHandler)})
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fasthttp.MethodGet)
	ctx.Request.SetRequestURI("/v1/reservation/" + id + "?wait=0s")
	ctx.SetUserValue("id", id)
	front.SetContext(ctx, context.Background())
	api.FastRoutes()[1].Handler(ctx)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", ctx.Response.StatusCode())
	for k, v := range ctx.Response.Header.All() {
		if string(k) != fasthttp.HeaderDate { // the only header that may differ
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.Write(ctx.Response.Body())
	return b.String()
}

// A node answers a read of a reservation it saw settled from memory,
// byte for byte as a round answers it, whatever the state (failed for
// want of seats or of an area, paid, cancelled, expired); held and
// unknown reservations are read through a round.
func TestClusterAnswersSettledReadsAsRounds(t *testing.T) {
	n := clusterNode(t)
	s := &transcript{ctx: context.Background(), l: n.Ledger(), tickets: n.Tickets()}
	open(s, 1000, "fan")
	open(s, 0, "org")
	for _, ev := range []tickets.EventSpec{
		{EventName: "gig", Artist: "band", Organizer: "org", HoldTime: time.Hour, Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 1, ColCount: 4}}},
		{EventName: "brief", Artist: "band", HoldTime: time.Nanosecond, Areas: []tickets.AreaSpec{{AreaID: "A", RowCount: 1, ColCount: 4}}},
	} {
		if _, _, err := n.Tickets().CreateEvent(s.ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(event, area string, seats int) string {
		id, err := n.Tickets().Reserve("fan", tickets.ReserveRequest{EventID: event, AreaID: area, Kind: tickets.Random, NumOfSeats: seats})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	held, paid, cancelled := reserve("gig", "A", 1), reserve("gig", "A", 1), reserve("gig", "A", 1)
	soldOut, noArea := reserve("gig", "A", 2), reserve("gig", "Z", 1)
	if _, err := n.Tickets().PayReservation(s.ctx, paid, "fan"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Tickets().CancelReservation(s.ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	expired := reserve("brief", "A", 1)
	s.expired(expired)
	memory, rounds := n.Tickets().Reads()
	reads := []struct{ id, want string }{
		{soldOut, `"state":"FAILED","failedReason":"[NOT_AVAILABLE]`}, {noArea, `"state":"FAILED","failedReason":"[INVALID_EVENT_AREA]`},
		{paid, `"state":"PAID"`}, {cancelled, `"state":"CANCELLED"`}, {expired, `"state":"EXPIRED"`},
		{held, `"state":"RESERVED"`}, {"00000000-0000-4000-8000-000000000000", "404\n"},
	}
	for _, read := range reads {
		warm := getReservation(n.Tickets(), read.id)
		cold := getReservation(ticketcluster.New(n.caller, n.ledger, int(n.cfg.Kafka.Partitions)), read.id) // remembers nothing
		if warm != cold || !strings.Contains(cold, read.want) {
			t.Fatalf("reservation %s (want %s): the node answered\n%s\na round\n%s", read.id, read.want, warm, cold)
		}
	}
	m, r := n.Tickets().Reads()
	if m-memory != 5 || r-rounds != 2 {
		t.Fatalf("%d reads answered from memory and %d through rounds; want 5 and 2", m-memory, r-rounds)
	}
}
