package kvapi

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/telemetry"
)

// /v0/entity carries the course's load: one small GET or PUT per request,
// at tens of thousands a second. It is served natively on fasthttp (see
// package front for why); fasthttp has read the whole body, up to the
// server's body limit, before the handler runs.

// FastRoutes are the routes Handler serves natively.
func (h *Handler) FastRoutes() []front.Route {
	// A value over the limit is refused before it is read.
	return []front.Route{{Pattern: "/v0/entity", Handler: h.serveEntity, MaxBody: h.maxValue}}
}

// serveEntity serves one /v0/entity request and records its metrics.
func (h *Handler) serveEntity(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	o, status := opOther, fasthttp.StatusInternalServerError
	defer func() {
		if status != statusLater {
			h.metrics.done(o, status, start)
		}
	}()
	o, status = h.entity(ctx, start)
}

// statusLater stands for the status of a reply whose write the connection
// makes durable before sending it (see write): its metrics are recorded
// then.
const statusLater = -1

func (h *Handler) entity(ctx *fasthttp.RequestCtx, start time.Time) (op, int) {
	if h.auth != nil && !h.auth(string(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))) {
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, "Bearer")
		return opOther, failFast(ctx, fasthttp.StatusUnauthorized, unauthorized)
	}
	var o op
	switch string(ctx.Method()) {
	case fasthttp.MethodGet:
		o = opGet
	case fasthttp.MethodPut:
		o = opPut
	case fasthttp.MethodDelete:
		o = opDelete
	default:
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, PUT, DELETE")
		return opOther, failFast(ctx, fasthttp.StatusMethodNotAllowed, "/v0/entity allows GET, PUT and DELETE")
	}
	id, err := keyParam(string(ctx.URI().QueryString()), "id")
	if err != nil {
		return o, failFast(ctx, fasthttp.StatusBadRequest, "id: "+err.Error())
	}
	switch o {
	case opGet:
		return o, h.get(ctx, id)
	case opPut:
		value := ctx.PostBody()
		if len(value) > h.maxValue {
			return o, failFast(ctx, fasthttp.StatusRequestEntityTooLarge, tooLarge(h.maxValue))
		}
		w, err := h.kv.PutNoWait(ctx, id, value)
		return o, h.write(ctx, o, start, w, err, fasthttp.StatusCreated)
	}
	w, err := h.kv.DeleteNoWait(ctx, id)
	return o, h.write(ctx, o, start, w, err, fasthttp.StatusAccepted)
}

func (h *Handler) get(ctx *fasthttp.RequestCtx, id string) int {
	buf := getBuffer()
	defer putBuffer(buf)
	v, found, err := h.kv.Get(ctx, id, (*buf)[:0])
	if err != nil {
		return h.fault(ctx, "get", err)
	}
	*buf = v[:0] // keep a buffer the value outgrew
	if !found {
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return fasthttp.StatusNotFound
	}
	ctx.SetContentType("application/octet-stream")
	ctx.SetBody(v) // a copy: the buffer goes back to the pool
	return fasthttp.StatusOK
}

// write answers status for an applied PUT or DELETE once it is durable.
// On a connection that defers acknowledgements (front.AckDeferrer) the
// handler returns at once and the connection holds the reply back until
// then, so that the writes of requests pipelined on one connection share
// a fsync instead of taking one each; it returns statusLater.
func (h *Handler) write(ctx *fasthttp.RequestCtx, o op, start time.Time, w kv.Write, err error, status int) int {
	if err != nil {
		return h.fault(ctx, opNames[o], err)
	}
	ctx.SetStatusCode(status)
	d, ok := ctx.Conn().(front.AckDeferrer)
	if !ok {
		if err := w.Wait(); err != nil {
			return h.fault(ctx, opNames[o], err)
		}
		return status
	}
	d.DeferAck(func() error {
		err := w.Wait()
		if err != nil {
			h.log.Error("key-value write failed after its handler returned; connection closed without replying", "op", opNames[o], "err", err)
			status = fasthttp.StatusInternalServerError
		}
		h.metrics.done(o, status, start)
		return err
	})
	return statusLater
}

// failFast writes a plain-text error, as fail does, and returns its status.
func failFast(ctx *fasthttp.RequestCtx, status int, msg string) int {
	ctx.Response.ResetBody()
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetStatusCode(status)
	ctx.SetBodyString(msg + "\n")
	return status
}

// fault answers a storage failure: a full or failed disk as such (see
// refusal), anything else logged and a 500 without details.
func (h *Handler) fault(ctx *fasthttp.RequestCtx, what string, err error) int {
	if status, msg := refusal(err); status != 0 {
		if status == fasthttp.StatusServiceUnavailable {
			ctx.Response.Header.Set("Retry-After", "1")
		}
		return failFast(ctx, status, msg)
	}
	h.logFault(telemetry.FastRequestID(ctx), what, err)
	return failFast(ctx, fasthttp.StatusInternalServerError, "internal error")
}
