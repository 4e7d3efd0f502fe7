package front

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Bodies are admitted before they are read. fasthttp streams request
// bodies (Server.StreamRequestBody): it calls the handler once it has the
// headers and at most 8 KiB of the body, so a connection that declares
// 4 MiB and sends nothing more holds that much, not 4 MiB. The router then
// decides, from the headers alone, in this order:
//
//   - framing: Content-Length with Transfer-Encoding, or two
//     Transfer-Encoding headers (RFC 9112 §6.1, request smuggling) → 400;
//   - the route's body limit → 413;
//   - the API key, unless the route is Open → 401;
//   - the body budget (Limits.BodyBytes) → 503 overloaded, Retry-After;
//   - the work in progress (Limits.MaxWork) → 503 overloaded, Retry-After.
//
// Each refusal closes the connection, whose unread body would otherwise
// be taken for the next request. An admitted body is read whole and held
// against the budget until the handler returns.

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
// for route r (nil: no native route) with Authorization auth, and how
// many bytes of the budget it holds if so.
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
	want := n
	if n < 0 {
		want = limit + 1 // read at most one byte more, for the handler's limit check
	}
	if !rt.guard.bodies.take(want) {
		return 0, refuseOverloaded
	}
	return want, nil
}

// admitFast admits and reads the body of a request fasthttp serves, and
// takes its work (Limits.MaxWork). It returns what the request holds, or
// false after refusing.
func (rt *router) admitFast(ctx *fasthttp.RequestCtx, r *route) (hold, bool) {
	h := &ctx.Request.Header
	n := h.ContentLength() // -1: chunked, -2: none
	if (n == -1 || n > 0) && smuggling(h.RawHeaders()) {
		rt.refuseFast(ctx, refuseFraming, true)
		return hold{}, false
	}
	if n == 0 || n == -2 {
		if !rt.guard.work.take(workOf(0)) {
			rt.refuseFast(ctx, refuseBusy, false) // nothing unread: the connection lives on
			return hold{}, false
		}
		return hold{work: workOf(0)}, true
	}
	held, no := rt.admission(r, int64(n), h.Peek(fasthttp.HeaderAuthorization))
	if no == nil && !rt.guard.work.take(workOf(held)) {
		rt.guard.bodies.give(held)
		no = refuseBusy
	}
	if no != nil {
		rt.refuseFast(ctx, no, true)
		return hold{}, false
	}
	ok, cut := readFastBody(ctx, n, held)
	if !ok {
		rt.guard.release(hold{body: held, work: workOf(held)})
		rt.refuseFast(ctx, refuseBodyRead, true)
		return hold{}, false
	}
	return hold{body: held, work: workOf(held), cut: cut}, true
}

// readFastBody reads ctx's streamed body, of length n (-1: chunked, at
// most limit bytes), into the request. It reports whether the read
// succeeded, and whether a chunked body was cut at limit: such a body is
// over the route's limit, and the rest of it is still on the connection.
func readFastBody(ctx *fasthttp.RequestCtx, n int, limit int64) (ok, cut bool) {
	if n >= 0 {
		// Body reads the stream; on a failed read it holds the error's
		// text instead, which is shorter than any body that is not
		// already whole when the handler is called (8 KiB).
		return len(ctx.Request.Body()) == n, false
	}
	stream := ctx.RequestBodyStream()
	if stream == nil {
		return true, false
	}
	b, err := io.ReadAll(io.LimitReader(stream, limit))
	if err != nil {
		return false, false
	}
	ctx.Request.SetBodyRaw(b)
	return true, int64(len(b)) == limit
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
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	}
	if r == refuseUnauthorized {
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, "Bearer")
	}
	ctx.SetStatusCode(r.status)
	ctx.SetContentType("application/problem+json")
	ctx.SetBody(r.problem())
	if unread && r != refuseFraming {
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

// admitNet admits the body of a native route's request that net/http
// serves; net/http itself refuses bad framing. It returns the bytes held,
// or false after refusing.
func (rt *router) admitNet(w http.ResponseWriter, req *http.Request, r *route) (int64, bool) {
	if req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
		return 0, true
	}
	held, no := rt.admission(r, req.ContentLength, []byte(req.Header.Get("Authorization")))
	if no != nil {
		rt.guard.reject(no.reason)
		h := w.Header()
		if no.status == http.StatusServiceUnavailable {
			h.Set("Retry-After", "1")
		}
		if no == refuseUnauthorized {
			h.Set("WWW-Authenticate", "Bearer")
		}
		if req.ProtoMajor == 1 {
			// The body is unread. On HTTP/2 the stream ends alone: there
			// net/http reads Connection: close as "GOAWAY", which would end
			// every other stream of the connection too.
			h.Set("Connection", "close")
		}
		h.Set("Content-Type", "application/problem+json")
		problem := no.problem()
		h.Set("Content-Length", strconv.Itoa(len(problem)))
		w.WriteHeader(no.status)
		_, _ = w.Write(problem)
		lingerNet(w, req)
		return 0, false
	}
	req.Body = readCloser{io.LimitReader(req.Body, held), req.Body}
	return held, true
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

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// shed bounds the work of the requests net/http serves (Limits.MaxWork):
// past it a request is answered 503 overloaded with Retry-After at once.
// Over HTTP/2 that ends one stream; the connection and its other streams
// live on.
func (g *guard) shed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		units := workOf(max(r.ContentLength, 0))
		if !g.work.take(units) {
			g.reject(refuseBusy.reason)
			h := w.Header()
			h.Set("Retry-After", "1")
			h.Set("Content-Type", "application/problem+json")
			w.WriteHeader(refuseBusy.status)
			_, _ = w.Write(refuseBusy.problem())
			return
		}
		defer g.work.give(units)
		next.ServeHTTP(w, r)
	})
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
