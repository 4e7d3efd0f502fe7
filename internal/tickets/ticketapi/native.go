package ticketapi

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets"
)

// A flash sale is a million reservation requests and as many long-polls in
// seconds, each tiny: those two routes are served natively on fasthttp
// (see package front for why); the other routes are net/http handlers.

// FastRoutes are the routes the API serves natively.
func (a *API) FastRoutes() []front.Route {
	return []front.Route{
		// Reservations are open to users without the key; their bodies
		// are small.
		a.native("POST /v1/event/{id}/reservation", a.reserve, maxReservationBody),
		a.native("GET /v1/reservation/{id}", a.getReservation, maxReservationBody),
	}
}

type nativeHandler func(ctx *fasthttp.RequestCtx) int

// native makes h a route, open to callers without the key (front.Route's
// Open) with bodies of at most maxBody bytes, that records its latency
// under pattern, as handle does for net/http.
func (a *API) native(pattern string, h nativeHandler, maxBody int) front.Route {
	return front.Route{Pattern: pattern, Open: true, MaxBody: maxBody, Handler: func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		code := h(ctx)
		a.latency.WithLabelValues(pattern, statusText(code)).Observe(time.Since(start).Seconds())
	}}
}

func (a *API) reserve(ctx *fasthttp.RequestCtx) int {
	raw := ctx.PostBody()
	if len(raw) > maxReservationBody {
		return problemFast(ctx, problem{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("body over %d bytes", maxReservationBody)})
	}
	body, err := decodeReserve(raw)
	if err != nil {
		return invalid(ctx, "malformed JSON body: "+err.Error())
	}
	wait, err := parseWait(string(ctx.QueryArgs().Peek("wait")), 0)
	if err != nil {
		return invalid(ctx, err.Error())
	}
	req, err := body.request(front.PathValue(ctx, "id"))
	if err != nil {
		return invalid(ctx, err.Error())
	}
	id, err := a.box.Reserve(body.UserID, req)
	if err != nil {
		return a.failFast(ctx, err)
	}
	ctx.Response.Header.Set(TokenHeader, a.holdToken(id))
	if wait == 0 && !bytes.Contains(ctx.Request.Header.Peek(fasthttp.HeaderAccept), []byte("application/json")) {
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString(id)
		return http.StatusOK
	}
	res, err := a.box.Reservation(front.Context(ctx), id, wait)
	if err != nil {
		return a.failFast(ctx, err)
	}
	if !res.Final() { // the request as filed, still PROCESSING
		res = *tickets.NewReservation(id, body.UserID, req, time.Now().UTC())
	}
	return reservationFast(ctx, &res)
}

func (a *API) getReservation(ctx *fasthttp.RequestCtx) int {
	wait, err := parseWait(string(ctx.QueryArgs().Peek("wait")), LongPoll)
	if err != nil {
		return invalid(ctx, err.Error())
	}
	res, err := a.box.Reservation(front.Context(ctx), front.PathValue(ctx, "id"), wait)
	if err != nil {
		return a.failFast(ctx, err)
	}
	if !res.Final() {
		ctx.Response.Header.Set("Retry-After", "0")
		return problemFast(ctx, problem{http.StatusServiceUnavailable, "not_decided", "the reservation is not decided yet; retry"})
	}
	return reservationFast(ctx, &res)
}

func invalid(ctx *fasthttp.RequestCtx, detail string) int {
	return problemFast(ctx, problem{http.StatusBadRequest, string(ledger.CodeInvalidArgument), detail})
}

func (a *API) failFast(ctx *fasthttp.RequestCtx, err error) int {
	p := a.failure(err, telemetry.FastRequestID(ctx))
	if p.status == http.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	return problemFast(ctx, p)
}

func problemFast(ctx *fasthttp.RequestCtx, p problem) int {
	ctx.SetContentType("application/problem+json")
	ctx.SetStatusCode(p.status)
	ctx.SetBody(problemBody(p.status, p.code, p.detail))
	return p.status
}

// reservationFast writes r as a 200 JSON reply.
func reservationFast(ctx *fasthttp.RequestCtx, r *tickets.Reservation) int {
	buf := encodeReservation(r)
	ctx.SetContentType("application/json")
	ctx.SetBody(buf.Bytes())
	bodyBufs.Put(buf)
	return http.StatusOK
}
