package ledgerapi

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry"
)

// POST /v1/transfers is the ledger's hot route: a small body, a
// group-committed write and a small reply, tens of thousands a second.
// It, the batch route and the account read are served natively on
// fasthttp (see package front for why).

// nativeHandler serves a route natively and returns the status it wrote.
type nativeHandler func(a *API, ctx *fasthttp.RequestCtx) int

// FastRoutes are the routes the API serves natively: authenticated and
// measured here as v1 does for net/http.
func (a *API) FastRoutes() []front.Route {
	var out []front.Route
	for _, rt := range ledgerRoutes {
		serve := rt.native
		if serve == nil {
			continue
		}
		rm := a.metrics.forRoute(rt.path, rt.method)
		out = append(out, front.Route{Pattern: rt.method + " " + rt.path, Handler: func(ctx *fasthttp.RequestCtx) {
			start := time.Now()
			status := http.StatusInternalServerError
			defer func() { rm.done(status, start) }()
			if !a.AuthorizedHeader(string(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))) {
				status = problemFast(ctx, newProblem(codeUnauthorized, "this route needs Authorization: Bearer <api key>"))
				return
			}
			status = serve(a, ctx)
		}})
	}
	return out
}

// viaNet serves a native route to a net/http request, for API.Handler's
// own users; surge serve's front door sends these requests to FastRoutes.
func (a *API) viaNet(serve nativeHandler) handlerFunc {
	h := front.NetHandler(func(ctx *fasthttp.RequestCtx) { serve(a, ctx) }, MaxBatchBody, telemetry.HandOver)
	return func(_ *API, w http.ResponseWriter, r *http.Request) int {
		sw := statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(&sw, r)
		return sw.status
	}
}

func (a *API) createTransfer(ctx *fasthttp.RequestCtx) int {
	body, p := fastBody(ctx, maxBody)
	if p != nil {
		return problemFast(ctx, p)
	}
	req, ierr := decodeTransfer(body)
	if ierr != nil {
		return problemFast(ctx, inputProblem(ierr))
	}
	if req.From == req.To {
		return problemFast(ctx, sameAccount(req.From))
	}
	t, replayed, err := a.ledger.Transfer(front.Context(ctx), req)
	if err != nil {
		return a.failFast(ctx, err)
	}
	ob := getBuf()
	*ob = appendTransfer(*ob, &t)
	return sendFast(ctx, created(replayed), "application/json", ob)
}

// getAccount serves GET /v1/accounts/{id} natively, for the same reason as
// createBatch. The id is the rest of the path, as fasthttp decoded it: the
// route's pattern has it match one segment, and net/http's (viaNet), whose
// escaped path may decode to more, is refused by ValidID as PathValue's was.
func (a *API) getAccount(ctx *fasthttp.RequestCtx) int {
	id := strings.TrimPrefix(string(ctx.Path()), accountsPrefix)
	if !ValidID(id) {
		return problemFast(ctx, newProblem(string(ledger.CodeInvalidArgument), "id in path: "+msgID))
	}
	acct, err := a.ledger.Account(front.Context(ctx), id)
	if err != nil {
		return a.failFast(ctx, err)
	}
	ob := getBuf()
	*ob = appendAccount(*ob, &acct)
	return sendFast(ctx, http.StatusOK, "application/json", ob)
}

const accountsPrefix = "/v1/accounts/"

// failFast answers a request the ledger failed with its problem.
func (a *API) failFast(ctx *fasthttp.RequestCtx, err error) int {
	return problemFast(ctx, a.ledgerProblem(front.Context(ctx), fastRequest(ctx), err))
}

// fastRequest names a request fasthttp read (or NetHandler made) in logs.
func fastRequest(ctx *fasthttp.RequestCtx) requestInfo {
	return requestInfo{telemetry.FastRequestID(ctx), string(ctx.Method()), string(ctx.Path())}
}

var contentJSON = []byte("application/json")

// fastBody checks a request's Content-Type and size as readBody does; the
// body is fasthttp's, valid until the reply.
func fastBody(ctx *fasthttp.RequestCtx, limit int) ([]byte, *problem) {
	body := ctx.PostBody()
	if ct := ctx.Request.Header.ContentType(); len(body) > 0 && len(ct) > 0 && !bytes.Equal(ct, contentJSON) && !isJSON([]string{string(ct)}) {
		return nil, newProblem(codeUnsupportedMediaType, "Content-Type must be application/json")
	}
	if len(body) > limit || ctx.Request.Header.ContentLength() > limit {
		return nil, tooLarge(limit)
	}
	return body, nil
}

// problemFast sends p and returns its status.
func problemFast(ctx *fasthttp.RequestCtx, p *problem) int {
	if name, value := p.header(); name != "" {
		ctx.Response.Header.Set(name, value)
	}
	ob := getBuf()
	*ob = appendProblem(*ob, p)
	return sendFast(ctx, p.status, "application/problem+json", ob)
}

// sendFast writes a complete reply and releases ob.
func sendFast(ctx *fasthttp.RequestCtx, status int, contentType string, ob *[]byte) int {
	ctx.SetStatusCode(status)
	ctx.SetContentType(contentType)
	ctx.SetBody(*ob)
	putBuf(ob)
	return status
}
