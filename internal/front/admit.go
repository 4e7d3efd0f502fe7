package front

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Bodies are admitted as they arrive. fasthttp streams request bodies
// (Server.StreamRequestBody): it calls the handler once it has the headers
// and at most 8 KiB of the body, which must come at Limits.MinBodyRate
// too (paceFirstBytes). The router then decides, from the headers alone,
// in this order:
//
//   - framing: Content-Length with Transfer-Encoding, or two
//     Transfer-Encoding headers (RFC 9112 §6.1, request smuggling), or
//     two Authorization headers → 400 invalid_framing;
//   - the route's body limit → 413;
//   - the API key, unless the route is Open → 401.
//
// Then it reads the body, charging the body budget (Limits.BodyBytes) for
// each chunk as it arrives, not for the length the request declares: a
// client that declares 4 MiB and sends 8 KiB holds 8 KiB. A chunk the
// budget cannot take → 503 overloaded, Retry-After; a body that arrives
// slower than Limits.MinBodyRate once bodyGrace is over → 408
// request_timeout. Once the body is whole, the request takes its place
// among the requests in progress (Limits.MaxRequests) and its work
// (Limits.MaxWork, and its client's share, Limits.MaxWorkPerClient) or is
// answered 503 overloaded, Retry-After. net/http's requests are
// admitted the same way (admitNet). /healthz and /readyz take no work, so
// that a server at capacity still says it is alive.
//
// Each refusal before the body is whole closes the connection, whose
// unread body would otherwise be taken for the next request. An admitted
// body is held against the budget until the handler returns.

// refusal is why a request is not admitted: its status, problem code,
// detail and the rejection reason counted in metrics.
type refusal struct {
	status       int
	code, detail string
	reason       string
}

var (
	refuseFraming = &refusal{http.StatusBadRequest, "invalid_framing",
		"Content-Length with Transfer-Encoding, or Transfer-Encoding twice", reasonFraming}
	refuseTooLarge = &refusal{http.StatusRequestEntityTooLarge, "body_too_large",
		"request body over this route's limit", reasonBodyTooLarge}
	refuseUnauthorized = &refusal{http.StatusUnauthorized, "unauthorized",
		"this route needs Authorization: Bearer <api key>", reasonUnauthorized}
	refuseOverloaded = &refusal{http.StatusServiceUnavailable, "overloaded",
		"the server holds as many request bodies as it may; retry later", reasonBodyBudget}
	refuseBodyRead = &refusal{http.StatusBadRequest, "invalid_body",
		"the request body could not be read", reasonBodyRead}
	refuseBusy = &refusal{http.StatusServiceUnavailable, "overloaded",
		"the server has as much work in progress as it may take; retry later", reasonWork}
	refuseRequests = &refusal{http.StatusServiceUnavailable, "overloaded",
		"the server has as many requests in progress as it may take; retry later", reasonRequests}
	refuseClientBusy = &refusal{http.StatusServiceUnavailable, "overloaded",
		"this client has as much work in progress as it may take; retry later", reasonClientWork}
	refuseSlow = &refusal{http.StatusRequestTimeout, "request_timeout",
		"the request arrived slower than the server allows", reasonSlow}
	refuseTwoKeys = &refusal{http.StatusBadRequest, "invalid_framing",
		"more than one Authorization header", reasonFraming}
	refuseMalformed = &refusal{http.StatusBadRequest, "malformed_request",
		"the request could not be parsed as HTTP/1.1", reasonMalformed}
)

// problem is the refusal as an RFC 9457 document, the shape of the
// ledger's.
func (r *refusal) problem() []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"https://surge.dev/problems/` + r.code + `","title":"`)
	b.WriteString(http.StatusText(r.status))
	b.WriteString(`","status":`)
	b.WriteString(strconv.Itoa(r.status))
	b.WriteString(`,"code":"` + r.code + `","detail":"` + r.detail + `"}`)
	return b.Bytes()
}

// admission decides whether a body of length n (-1: unknown) may be read
// for route r (nil: no native route) with Authorization auth, and returns
// the route's body limit if so.
func (rt *router) admission(r *route, n int64, auth []byte) (int64, *refusal) {
	limit := rt.maxBody
	if r != nil && r.maxBody > 0 {
		limit = r.maxBody
	}
	if n > limit {
		return 0, refuseTooLarge
	}
	if r != nil && !r.open && rt.authorize != nil && !rt.authorize(b2s(auth)) {
		return 0, refuseUnauthorized
	}
	return limit, nil
}

// unbudgeted reports whether path is answered outside every budget: the
// probes that tell an orchestrator the process lives and is ready, which
// must not be refused because clients keep the server busy.
func unbudgeted(path string) bool { return path == "/healthz" || path == "/readyz" }

// admitFast admits and reads the body of a request fasthttp serves, and
// takes its place and work (Limits.MaxRequests, Limits.MaxWork). It
// returns what the request holds, or false after refusing.
func (rt *router) admitFast(ctx *fasthttp.RequestCtx, r *route) (hold, bool) {
	h := &ctx.Request.Header
	n := h.ContentLength() // -1: chunked, -2: none
	if len(h.Peek(fasthttp.HeaderAuthorization)) > 0 && len(h.PeekAll(fasthttp.HeaderAuthorization)) > 1 {
		rt.refuseFast(ctx, refuseTwoKeys, n == -1 || n > 0)
		return hold{}, false
	}
	var body int64
	cut := false
	if n == -1 || n > 0 {
		if smuggling(h.RawHeaders()) {
			rt.refuseFast(ctx, refuseFraming, true)
			return hold{}, false
		}
		b, limit, no := rt.readFastBody(ctx, r, int64(n))
		if no != nil {
			rt.refuseFast(ctx, no, true)
			return hold{}, false
		}
		ctx.Request.SetBodyRaw(b)
		body = int64(len(b))
		// A chunked body cut at its limit is over it, and the rest of it
		// is still on the connection.
		cut = n == -1 && body > limit
	}
	if body == 0 && unbudgeted(b2s(ctx.Path())) {
		return hold{}, true
	}
	client := rt.guard.clients.of(addrOf(ctx.RemoteAddr()), func() []string { return fastForwarded(h) })
	held, no := rt.guard.takeWork(client, rt.guard.workOf(body))
	if no != nil {
		rt.guard.bodies.give(body)
		rt.refuseFast(ctx, no, cut) // the body is read: the connection lives on
		return hold{}, false
	}
	held.body, held.cut = body, cut
	return held, true
}

// fastForwarded is a fasthttp request's X-Forwarded-For headers.
func fastForwarded(h *fasthttp.RequestHeader) []string {
	var v []string
	for _, b := range h.PeekAll("X-Forwarded-For") {
		v = append(v, string(b))
	}
	return v
}

// readFastBody admits ctx's body, of length n (-1: chunked), for route r
// and reads it against the body budget. It returns the body and the
// route's limit; a chunked body is read to one byte past the limit, for
// the handler's limit check.
func (rt *router) readFastBody(ctx *fasthttp.RequestCtx, r *route, n int64) ([]byte, int64, *refusal) {
	limit, no := rt.admission(r, n, ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))
	if no != nil {
		return nil, 0, no
	}
	src := ctx.RequestBodyStream()
	if src == nil {
		src = bytes.NewReader(ctx.Request.Body())
	}
	p := pacer{set: ctx.Conn().SetReadDeadline, start: ctx.Time(), rate: rt.guard.limits.MinBodyRate}
	if rt.readTimeout > 0 {
		p.hard = ctx.Time().Add(rt.readTimeout)
	}
	b, no := rt.guard.readBody(src, n, limit+1, p)
	return b, limit, no
}

// fastPrefetch is how much of a body fasthttp reads before it calls the
// handler (Server.StreamRequestBody): up to 8 KiB, which the connection's
// buffers hold whatever the body's length.
const fastPrefetch = 8 << 10

// paceFirstBytes bounds, once a request's headers are read, the wait for
// the body's first bytes that fasthttp reads itself, as readBody bounds
// the rest: a body that does not start arriving within bodyGrace is cut
// by requestError.
func (rt *router) paceFirstBytes(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	n := int64(h.ContentLength())
	if n <= 0 {
		return fasthttp.RequestConfig{}
	}
	d := bodyGrace + time.Duration(min(n, fastPrefetch))*time.Second/time.Duration(rt.guard.limits.MinBodyRate)
	if rt.readTimeout > 0 {
		d = min(d, rt.readTimeout)
	}
	return fasthttp.RequestConfig{ReadTimeout: d}
}

// requestError answers a request fasthttp could not read: 408 for one
// that did not come in time (--header-timeout, or a body's first bytes
// within bodyGrace), 413 for a body over
// the limit (fasthttp's own answer would be 400), else 400. The answer
// never quotes the request: fasthttp's errors hold its bytes. fasthttp
// closes the connection after it.
func (rt *router) requestError(ctx *fasthttp.RequestCtx, err error) {
	r := refuseMalformed
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		r = refuseSlow
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		r = refuseTooLarge
	}
	rt.guard.reject(r.reason)
	ctx.Response.Reset()
	ctx.SetStatusCode(r.status)
	ctx.SetContentType("application/problem+json")
	ctx.SetBody(r.problem())
}

// smuggling reports whether raw request headers hold Content-Length along
// with Transfer-Encoding, or Transfer-Encoding twice. fasthttp would read
// such a request as chunked and keep the connection.
func smuggling(raw []byte) bool {
	te, cl := 0, 0
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name = bytes.TrimSpace(name)
		switch {
		case bytes.EqualFold(name, []byte(fasthttp.HeaderTransferEncoding)):
			te++
		case bytes.EqualFold(name, []byte(fasthttp.HeaderContentLength)):
			cl++
		}
	}
	return te > 1 || te > 0 && cl > 0
}

// refuseFast answers a refused fasthttp request, closing its connection
// if a body is left unread.
func (rt *router) refuseFast(ctx *fasthttp.RequestCtx, r *refusal, unread bool) {
	rt.guard.reject(r.reason)
	ctx.Response.Reset()
	if unread {
		ctx.SetConnectionClose()
	}
	if r.status == http.StatusServiceUnavailable {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, retryAfterValues[rt.guard.retry.next()])
	}
	if r == refuseUnauthorized {
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, "Bearer")
	}
	ctx.SetStatusCode(r.status)
	ctx.SetContentType("application/problem+json")
	ctx.SetBody(r.problem())
	if unread && r != refuseFraming && r != refuseSlow {
		lingerAfter(ctx)
	}
}

// lingerAfter sends ctx's response itself, then lingers (lingerClose):
// a client still sending the body it was refused would otherwise get a
// reset instead of the answer. fasthttp closes a Connection: close
// response's connection at once, so the answer goes out from the hijacked
// connection instead.
func lingerAfter(ctx *fasthttp.RequestCtx) {
	answer := ctx.Response.String()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		_ = c.SetWriteDeadline(time.Now().Add(lingerTime))
		if _, err := io.WriteString(c, answer); err == nil {
			lingerClose(c)
		}
	})
}

// admitNet admits the requests net/http serves as admitFast does those
// of fasthttp (net/http itself refuses two Transfer-Encodings): their bodies read
// against the body budget as they arrive, then their work taken, before
// next is called. A body is handed to next whole, from memory.
func (rt *router) admitNet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hasBody := req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0
		if len(req.Header["Authorization"]) > 1 {
			rt.refuseNet(w, req, refuseTwoKeys, hasBody)
			return
		}
		if req.ProtoMajor == 1 && len(req.TransferEncoding) > 0 {
			// net/http takes Content-Length with Transfer-Encoding as
			// chunked and drops the Content-Length, so the two cannot be
			// told apart here: the connection ends after the reply, and
			// nothing after the body is read as a request (RFC 9112 §6.1).
			w.Header().Set("Connection", "close")
		}
		var body int64
		if hasBody {
			b, no := rt.readNetBody(w, req)
			if no != nil {
				rt.refuseNet(w, req, no, true)
				return
			}
			req.Body = newWholeBody(b) // net/http closes the original itself
			body = int64(len(b))
		}
		if body == 0 && unbudgeted(req.URL.Path) {
			next.ServeHTTP(w, req)
			return
		}
		client := rt.guard.clients.of(clientAddr(req), func() []string { return req.Header["X-Forwarded-For"] })
		held, no := rt.guard.gate.takeWork(req, client, rt.guard.workOf(body))
		if no != nil {
			rt.guard.bodies.give(body)
			rt.refuseNet(w, req, no, false)
			return
		}
		held.body = body
		req, p := rt.guard.parkedNet(req, held)
		defer p.end()
		next.ServeHTTP(w, req)
	})
}

// readNetBody admits req's body for its native route, if it has one, and
// reads it against the body budget within Limits.BodyTimeout. A body of
// unknown length is read to one byte past the limit, for the handler's
// limit check.
func (rt *router) readNetBody(w http.ResponseWriter, req *http.Request) ([]byte, *refusal) {
	limit, no := rt.admission(rt.matchNet(req.Method, req.URL.Path), req.ContentLength, []byte(req.Header.Get("Authorization")))
	if no != nil {
		return nil, no
	}
	rc := http.NewResponseController(w)
	now := time.Now()
	p := pacer{set: rc.SetReadDeadline, start: now, hard: now.Add(rt.guard.limits.BodyTimeout), rate: rt.guard.limits.MinBodyRate}
	if req.ProtoMajor == 2 {
		// A stream's DATA queues behind the other streams of its
		// connection, so the pace starts with its first bytes.
		p.start = time.Time{}
	}
	b, no := rt.guard.readBody(req.Body, req.ContentLength, limit+1, p)
	// Lifted once the body is read, so that a connection whose request
	// has ended (the dashboard's events) lives on. An HTTP/2 stream's
	// deadline bounds only its body, read by now: left alone, it saves
	// a message to net/http's connection loop.
	if req.ProtoMajor == 1 {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return b, no
}

// refuseNet answers a refused net/http request, closing its HTTP/1
// connection if a body is left unread.
func (rt *router) refuseNet(w http.ResponseWriter, req *http.Request, no *refusal, unread bool) {
	rt.guard.reject(no.reason)
	h := w.Header()
	if no.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", retryAfterValues[rt.guard.retry.next()])
	}
	if no == refuseUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	if unread && req.ProtoMajor == 1 {
		// The body is unread. (Over HTTP/2, net/http would take the
		// header as the handler's wish to end the whole connection.)
		h.Set("Connection", "close")
	}
	h.Set("Content-Type", "application/problem+json")
	problem := no.problem()
	h.Set("Content-Length", strconv.Itoa(len(problem)))
	w.WriteHeader(no.status)
	_, _ = w.Write(problem)
	if unread && no != refuseSlow {
		lingerNet(w, req)
	}
}

// lingerNet closes the HTTP/1 connection of a refused request whose body
// is unread as lingerClose does, once the refusal is sent. net/http would
// close it itself after half a second at most (CloseWrite is not passed
// through a connection handed over from fasthttp), and a client still
// sending a large body would then get a reset instead of the refusal.
func lingerNet(w http.ResponseWriter, req *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok || req.ProtoMajor != 1 {
		return // HTTP/2 refuses the stream, not the connection
	}
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	go func() {
		lingerClose(c)
		_ = c.Close()
	}()
}

// lingerClose runs once a last answer (a refusal whose request body is
// unread, a GOAWAY) is sent: it stops writing and discards what the
// client still sends, within lingerTime and lingerBytes, before the
// connection closes, because closing with unread input makes the kernel
// send a reset, and a reset destroys the answer the client has not read
// yet.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, lingerBytes))
}
