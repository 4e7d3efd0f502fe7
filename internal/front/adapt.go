package front

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"
)

// parentKey holds, in a RequestCtx that NetHandler made, the net/http
// request's context: its deadline, cancellation and trace span.
type parentKey struct{}

// Context returns the context a handler should pass on for ctx's request:
// the net/http request's when it came through NetHandler, else ctx itself
// (whose Done closes when the server shuts down).
func Context(ctx *fasthttp.RequestCtx) context.Context {
	if p, ok := ctx.UserValue(parentKey{}).(context.Context); ok {
		return p
	}
	return ctx
}

// OnNetRequest, when set, is called with each RequestCtx NetHandler builds
// and the net/http writer and request it came from, before the handler
// runs: telemetry hands over the request id this way.
type OnNetRequest func(ctx *fasthttp.RequestCtx, w http.ResponseWriter, r *http.Request)

var requestCtxs = sync.Pool{New: func() any { return new(fasthttp.RequestCtx) }}

// NetHandler serves net/http requests with a fasthttp handler: for the
// native routes when they arrive over HTTP/2, or on a connection whose
// first request went to net/http. It reads at most maxBody+1 bytes of
// the body, so the handler's own limit check still sees an oversized one.
// Each request is copied, which costs more than either server alone:
// HTTP/1.1's common case never takes this path, HTTP/2's always does.
func NetHandler(h fasthttp.RequestHandler, maxBody int64, on OnNetRequest) http.Handler {
	a := &netAdapter{h: h, maxBody: maxBody, on: on}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, nil) })
}

// netAdapter is NetHandler's handler and its options.
type netAdapter struct {
	h       fasthttp.RequestHandler
	maxBody int64
	on      OnNetRequest
}

// serve serves r as NetHandler does: with a.h, or, when rt is set, with
// the native route r's method and path matched, its path values taken
// from r.URL.Path (a string of r's own, so not copied).
func (a *netAdapter) serve(w http.ResponseWriter, r *http.Request, rt *route) {
	body, err := netBody(r, a.maxBody+1)
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := requestCtxs.Get().(*fasthttp.RequestCtx)
	defer func() {
		ctx.ResetUserValues()
		ctx.Response.Reset()
		ctx.Request.Reset()
		requestCtxs.Put(ctx)
	}()
	// The request is copied into ctx's own (Init would copy it once
	// more); ctx has no connection, only its client's address.
	ctx.Init2(nil, nil, true)
	ctx.SetRemoteAddr(requestAddr(r))
	copyRequest(&ctx.Request, r, body)
	SetContext(ctx, r.Context())
	if a.on != nil {
		a.on(ctx, w, r)
	}
	if rt != nil {
		rt.setParams(r.URL.Path, ctx, false)
		rt.raw(ctx)
	} else {
		a.h(ctx)
	}
	writeResponse(w, &ctx.Response)
}

// netBody reads at most limit bytes of r's body: a body admission has
// read whole (wholeBody) as it is, any other from r.Body.
func netBody(r *http.Request, limit int64) ([]byte, error) {
	if b, ok := r.Body.(wholeBody); ok {
		if whole, unread := b.unread(); unread {
			return whole[:min(int64(len(whole)), limit)], nil
		}
	}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil, nil // none: net/http's HTTP/2 body would allocate to say so
	}
	return io.ReadAll(io.LimitReader(r.Body, limit))
}

func copyRequest(dst *fasthttp.Request, r *http.Request, body []byte) {
	dst.Header.SetMethod(r.Method)
	dst.SetRequestURI(r.URL.RequestURI())
	dst.Header.SetHost(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			dst.Header.Add(k, v)
		}
	}
	dst.SetBodyRaw(body)
	// A body cut at maxBody+1 keeps its declared length, which a handler
	// checks against its own limit.
	if r.ContentLength > int64(len(body)) {
		dst.Header.SetContentLength(int(r.ContentLength))
	}
}

func remoteAddr(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// writeResponse copies a fasthttp response to w; net/http sets the
// framing headers itself.
func writeResponse(w http.ResponseWriter, resp *fasthttp.Response) {
	n := -1
	if !resp.IsBodyStream() {
		n = len(resp.Body())
	}
	copyHeader(w.Header(), &resp.Header, n)
	if n < 0 {
		w.WriteHeader(resp.StatusCode())
		_ = resp.BodyWriteTo(flushWriter{w, http.NewResponseController(w)})
		return
	}
	w.WriteHeader(resp.StatusCode())
	_, _ = w.Write(resp.Body()) // a client gone mid-reply is no server fault
}

// copyHeader adds h's fields to hdr, less its framing, and a body's length
// n when it is known and not 0 (net/http handlers that know it say it
// too, rather than leave it to net/http's guess from the first write).
// The values are views of one string and share one backing array, a
// field's name is its canonical string (a constant for the common ones):
// three allocations for a response's fields rather than two a field.
func copyHeader(hdr http.Header, h *fasthttp.ResponseHeader, n int) {
	size := 20 // the length's digits
	for k, v := range h.All() {
		if !framing(k) {
			size += len(v)
		}
	}
	text := make([]byte, 0, size)
	vals := make([]string, 0, h.Len()+1)
	// put adds the value text holds from off; text never grows past
	// size, so the views stay valid.
	put := func(name string, off int) {
		s := b2s(text[off:len(text):len(text)])
		if old, ok := hdr[name]; ok {
			hdr[name] = append(old, s)
			return
		}
		vals = append(vals, s)
		hdr[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for k, v := range h.All() {
		if !framing(k) {
			off := len(text)
			text = append(text, v...)
			put(fieldName(k), off)
		}
	}
	if n > 0 {
		off := len(text)
		text = strconv.AppendInt(text, int64(n), 10)
		put(fasthttp.HeaderContentLength, off)
	}
}

// framing reports whether k is a framing field, which net/http sets itself.
func framing(k []byte) bool {
	switch string(k) {
	case fasthttp.HeaderContentLength, fasthttp.HeaderConnection, fasthttp.HeaderTransferEncoding:
		return true
	}
	return false
}

// responseNames are the names of the fields the native routes' responses
// carry most, which fieldName finds without an allocation.
var responseNames = [...]string{fasthttp.HeaderContentType, "Reservation-Token", fasthttp.HeaderRetryAfter,
	fasthttp.HeaderCacheControl, fasthttp.HeaderLocation, "X-Request-Id"}

// fieldName is the canonical name of response field k.
func fieldName(k []byte) string {
	for _, name := range responseNames {
		if string(k) == name {
			return name
		}
	}
	return http.CanonicalHeaderKey(string(k))
}

// flushWriter sends each write of a streamed body on at once.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// SetContext makes parent the context Context returns for ctx's request.
func SetContext(ctx *fasthttp.RequestCtx, parent context.Context) {
	ctx.SetUserValue(parentKey{}, parent)
}

// detach gives the net/http handler behind fasthttpadaptor a request whose
// strings are its own. The adaptor's request aliases fasthttp's buffers
// (its URL, method, host and header values are views of them), which the
// next request on the connection overwrites; a handler that keeps one of
// them, say an account id from the path as a cache key, would see it
// change under it. The body stays a view: handlers decode it before they
// return.
func detach(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := *r.URL
		u.Path, u.RawPath, u.RawQuery = strings.Clone(u.Path), strings.Clone(u.RawPath), strings.Clone(u.RawQuery)
		r.URL = &u
		r.RequestURI, r.Method, r.Host, r.Proto = strings.Clone(r.RequestURI), strings.Clone(r.Method), strings.Clone(r.Host), strings.Clone(r.Proto)
		for _, vs := range r.Header {
			for i, v := range vs {
				vs[i] = strings.Clone(v)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// abortCloses makes http.ErrAbortHandler break the connection behind
// fasthttpadaptor, as net/http does: the adaptor streams a flushed reply
// from a pipe and, when the handler panics after flushing, closes the pipe
// as if the reply were complete, so fasthttp would end it with its
// terminating chunk and a client would take a range cut by a storage
// error for a whole one. The adaptor passes the fasthttp request as the
// request's context; its connection is closed before the panic goes on.
func abortCloses(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if ctx, ok := r.Context().(*fasthttp.RequestCtx); ok && v == http.ErrAbortHandler {
				_ = ctx.Conn().Close()
			}
			panic(v)
		}()
		h.ServeHTTP(w, r)
	})
}
