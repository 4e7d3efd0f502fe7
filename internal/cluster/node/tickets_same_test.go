package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// paymentSuffix matches the attempt part of a payment's id, which the
// single node draws at random and a cluster counts.
var paymentSuffix = regexp.MustCompile(`(pay-\(new id\))-[0-9a-f]{8}`)

// reservation notes a reservation's answer without its times.
func (s *transcript) reservation(what string, r tickets.Reservation, err error) {
	s.note("%s: %s %s user=%s seats=%d failed=%q payment=%s err=%s %v", what, r.ID, r.State, r.UserID, len(r.Seats), r.FailureText(), r.PaymentID, ledger.CodeOf(err), err)
}

// reserve files a reservation and notes its decision; it returns its id.
func (s *transcript) reserve(user, area string, n int) string {
	id, err := s.tickets.Reserve(user, tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n})
	if err != nil {
		s.note("reserve %s %s %d: err=%v", user, area, n, err)
		return ""
	}
	r, err := s.tickets.Reservation(s.ctx, id, 5*time.Second)
	s.reservation("reserve "+user+" "+area, r, err)
	return id
}

// retry sends reservation id's request again and notes the answer, then
// the area's free seats: a retried request is answered with its first
// decision and changes nothing.
func (s *transcript) retry(id, user, area string, n int) {
	req := tickets.ReserveRequest{EventID: "gig", AreaID: area, Kind: tickets.Random, NumOfSeats: n}
	var r tickets.Reservation
	var err error
	if s.resend != nil {
		r, err = s.resend(id, user, req)
	} else {
		r, err = s.tickets.Reservation(s.ctx, id, 0)
	}
	s.reservation("retried "+user+" "+area, r, err)
	ev, err := s.tickets.Event("gig")
	for _, a := range ev.Areas {
		s.note("  area %s free=%d err=%v", a.Spec.AreaID, a.Available, err)
	}
}

// resender sends a reservation's request again through n's calls, as
// n's Tickets sends it the first time.
func resender(n *Node) func(id, user string, req tickets.ReserveRequest) (tickets.Reservation, error) {
	return func(id, user string, req tickets.ReserveRequest) (tickets.Reservation, error) {
		c := &ticketengine.Reserve{ID: id, User: user, Req: req}
		p := engine.ShardIndex(tickets.AreaKey(req.EventID, req.AreaID), int(n.cfg.Kafka.Partitions))
		b, err := n.caller.Call(context.Background(), p, append([]byte{calls.WorkloadTickets}, ticketengine.Encode(c)...), calls.Writes)
		if err == nil {
			err = ticketengine.DecodeOutcome(c, b)
		}
		if err != nil || c.Reservation == nil {
			return tickets.Reservation{}, errors.Join(err, errors.New("no reservation in the answer"))
		}
		return *c.Reservation, nil
	}
}

func (s *transcript) pay(id, account string) {
	r, err := s.tickets.PayReservation(s.ctx, id, account)
	s.reservation("pay from "+account, r, err)
}

func (s *transcript) cancel(id string) {
	r, err := s.tickets.CancelReservation(s.ctx, id)
	s.reservation("cancel", r, err)
}

// Ticketing with payments and a per-user seat limit, on a node over kfake,
// answers as the single process does: the same states, failures, error
// codes and details, payment ids (but for the attempt's part), balances,
// histories and totals.
func TestClusterTicketsAnswerAsOneNode(t *testing.T) {
	same(t, func(s *transcript) {
		open(s, 1000, "fan")
		open(s, 150, "poor")
		open(s, 0, "org")
		spec := tickets.EventSpec{EventName: "gig", Artist: "band", Organizer: "org", PerUserSeatLimit: 4, HoldTime: time.Hour,
			Areas: []tickets.AreaSpec{{AreaID: "A", Price: 100, RowCount: 2, ColCount: 4}, {AreaID: "B", RowCount: 1, ColCount: 4}}}
		for _, ev := range []tickets.EventSpec{spec, spec, {EventName: "gig", Artist: "other", Areas: spec.Areas}} {
			_, created, err := s.tickets.CreateEvent(s.ctx, ev)
			s.note("create event created=%v err=%s", created, ledger.CodeOf(err))
		}
		r1 := s.reserve("fan", "A", 2)
		s.retry(r1, "fan", "A", 2) // held: the same seats, none taken again
		r2 := s.reserve("fan", "B", 2)
		over := s.reserve("fan", "A", 1) // over the limit
		s.retry(over, "fan", "A", 1)     // failed: still failed, not decided again
		s.pay(r1, "fan")
		s.pay(r1, "fan") // a replay
		s.pay(r2, "fan") // free seats: no transfer
		s.cancel(r1)     // paid: no refunds
		r3 := s.reserve("poor", "A", 2)
		s.pay(r3, "poor") // 200 of 150
		s.pay(r3, "nobody")
		s.cancel(r3)
		s.pay(r3, "poor")           // cancelled
		s.cancel(r3)                // a replay
		s.retry(r3, "poor", "A", 2) // cancelled: its seats stay free
		s.retry(r1, "fan", "A", 2)  // paid
		s.reserve("poor", "A", 4)
		s.reserve("fan", "A", 1) // still over: paid seats count
		s.pay("00000000-0000-4000-8000-000000000000", "fan")
		s.accounts("fan", "poor", "org")
	})
}

// file files a reservation through ticketapi's reservation route, as a
// client does, and returns its id and hold token.
func (s *transcript) file(api *ticketapi.API, user, area string, n int) (string, string) {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetBodyString(fmt.Sprintf(`{"userId":%q,"eventId":"gig","areaId":%q,"numOfSeats":%d,"type":"RANDOM"}`, user, area, n))
	ctx.SetUserValue("id", "gig")
	api.FastRoutes()[0].Handler(ctx)
	id := string(ctx.Response.Body())
	r, err := s.tickets.Reservation(s.ctx, id, 5*time.Second) // a single process decides after answering
	s.reservation(fmt.Sprintf("file %s %s %d: %d", user, area, n, ctx.Response.StatusCode()), r, err)
	return id, string(ctx.Response.Header.Peek(ticketapi.TokenHeader))
}

// cancelWith cancels reservation id through ticketapi's route with a hold
// token ("" for none) and notes the answer.
func (s *transcript) cancelWith(api *ticketapi.API, id, token string) {
	req := httptest.NewRequest(http.MethodDelete, "/v1/reservation/"+id, nil)
	if token != "" {
		req.Header.Set(ticketapi.TokenHeader, token)
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	var body struct {
		State string `json:"state"`
		Code  string `json:"code"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	s.note("cancel %s with a token=%v: %d %s%s", id, token != "", w.Code, body.State, body.Code)
}

// expired waits until reservation id is no longer RESERVED (its hold ran
// out and the owner's Tick expired it) and notes it.
func (s *transcript) expired(id string) {
	r, err := s.tickets.Reservation(s.ctx, id, 0)
	for err == nil && r.State == tickets.Reserved && s.ctx.Err() == nil {
		runtime.Gosched()
		r, err = s.tickets.Reservation(s.ctx, id, 0)
	}
	s.reservation("expired", r, err)
}

// Cancelling with a hold token through ticketapi's route, holds that
// expire (their seats and their user's seat-limit claim given back), and
// paying or cancelling after the expiry answer on a cluster node as on a
// single process.
func TestClusterTicketsCancelAndExpireAsOneNode(t *testing.T) {
	same(t, func(s *transcript) {
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		s.ctx = ctx
		open(s, 1000, "fan")
		open(s, 0, "org")
		api := ticketapi.New(s.tickets, ticketapi.Options{APIKey: "key", HoldSecret: []byte("the same secret"), Logger: slog.New(slog.DiscardHandler)})
		spec := tickets.EventSpec{EventName: "gig", Artist: "band", Organizer: "org", PerUserSeatLimit: 2, HoldTime: time.Hour,
			Areas: []tickets.AreaSpec{{AreaID: "A", Price: 10, RowCount: 1, ColCount: 2}}}
		_, created, err := s.tickets.CreateEvent(s.ctx, spec)
		s.note("create event created=%v err=%s", created, ledger.CodeOf(err))
		mine, token := s.file(api, "fan", "A", 2)
		s.reserve("fan", "A", 1) // over the limit, and sold out
		other, otherToken := s.file(api, "bob", "A", 1)
		s.cancelWith(api, mine, "")         // no token: 401
		s.cancelWith(api, mine, otherToken) // another's token: 403
		s.cancelWith(api, mine, token)
		s.cancelWith(api, mine, token) // a replay
		s.cancelWith(api, other, otherToken)
		spec.EventName, spec.HoldTime = "brief", time.Nanosecond
		_, _, err = s.tickets.CreateEvent(s.ctx, spec)
		s.note("create brief err=%s", ledger.CodeOf(err))
		brief := func(user string, n int) string {
			id, err := s.tickets.Reserve(user, tickets.ReserveRequest{EventID: "brief", AreaID: "A", Kind: tickets.Random, NumOfSeats: n})
			r, err2 := s.tickets.Reservation(s.ctx, id, 5*time.Second)
			// Decided, and RESERVED or EXPIRED already, by when its
			// owner's Tick comes.
			s.note("reserve brief %s: decided=%v seats=%d err=%v", user, r.Final(), len(r.Seats), errors.Join(err, err2))
			return id
		}
		held := brief("fan", 2)
		s.expired(held)
		s.pay(held, "fan")
		s.cancel(held)
		s.expired(brief("fan", 2)) // the seats and the claim came back
		s.accounts("fan", "org")
	})
}
