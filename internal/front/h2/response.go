package h2

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// bodyBuffer is how much of a response body is gathered before it is
// sent: a response that fits goes out as HEADERS and one DATA frame,
// with its content-length, when its handler returns.
const bodyBuffer = 16 << 10

// responseWriter is a stream's http.ResponseWriter; it is used by the
// stream's handler alone.
type responseWriter struct {
	st         *stream
	head       bool // the request is HEAD: the body is counted, not sent
	hdr        http.Header
	status     int
	sentHeader bool
	buf        []byte
	written    int64
	err        error
}

// StreamID is the id of the stream w answers: a handler that keeps
// count of streams by id (the front's gate) learns its own.
func (w *responseWriter) StreamID() uint32 { return w.st.id }

// run serves the stream's request and ends the stream.
func (st *stream) run() {
	rw := &responseWriter{st: st, head: st.req.Method == http.MethodHead}
	if v := serve(st.h, rw, st.req); v != nil {
		if v != http.ErrAbortHandler {
			st.c.srv.logger().Error("h2: handler panicked", "path", st.req.URL.Path, "panic", v)
		}
		st.c.mu.Lock()
		st.c.resetLocked(st, http2.ErrCodeInternal, "handler_panic")
		st.c.mu.Unlock()
	} else {
		rw.finish()
	}
	st.cancel()
}

// serve runs h and returns what it panicked with, or nil.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request) (panicked any) {
	defer func() { panicked = recover() }()
	h.ServeHTTP(w, r)
	return nil
}

// Header is the response's header, until it is sent.
func (w *responseWriter) Header() http.Header {
	if w.hdr == nil {
		w.hdr = make(http.Header)
	}
	return w.hdr
}

// WriteHeader sets the status; an informational one (1xx) is sent at once.
func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.err = w.st.c.writeHeaders(w.st, code, w.hdr, false)
		return
	}
	w.status = code
}

// Write gathers p into the body, sending what has gathered past
// bodyBuffer.
func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	w.written += int64(len(p))
	if w.head {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= bodyBuffer {
		if err := w.FlushError(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// WriteString is Write of s.
func (w *responseWriter) WriteString(s string) (int, error) {
	return w.Write([]byte(s))
}

// Flush sends the header and what of the body has gathered.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush, reporting a stream or connection gone.
func (w *responseWriter) FlushError() error {
	if w.err != nil {
		return w.err
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHeader {
		w.sentHeader = true
		if w.err = w.st.c.writeHeaders(w.st, w.status, w.header(false), false); w.err != nil {
			return w.err
		}
	}
	if len(w.buf) > 0 {
		w.err = w.st.c.writeData(w.st, w.buf, false)
		w.buf = w.buf[:0]
	}
	return w.err
}

// SetReadDeadline bounds reading the request's body (see
// http.ResponseController).
func (w *responseWriter) SetReadDeadline(t time.Time) error {
	w.st.setReadDeadline(t)
	return nil
}

// finish sends what the handler left unsent and ends the stream: the
// header with the body's length when nothing was flushed, the body, and
// the trailers the handler declared.
func (w *responseWriter) finish() {
	if w.err != nil {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	trailers := w.trailers()
	end := len(w.buf) == 0 && len(trailers) == 0
	if !w.sentHeader {
		w.sentHeader = true
		if w.err = w.st.c.writeHeaders(w.st, w.status, w.header(true), end); w.err != nil || end {
			w.st.c.serverEnds(w.st)
			return
		}
	}
	if len(w.buf) > 0 || len(trailers) == 0 {
		if w.err = w.st.c.writeData(w.st, w.buf, len(trailers) == 0); w.err != nil {
			return
		}
	}
	if len(trailers) > 0 {
		w.err = w.st.c.writeHeaders(w.st, 0, trailers, true)
	}
	w.st.c.serverEnds(w.st)
}

// header is the header to send: the handler's, with a Date, a
// Content-Type sniffed from the body if the handler set none, and, when
// the whole body is known (whole), its Content-Length.
func (w *responseWriter) header(whole bool) http.Header {
	h := w.Header()
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{httpDate()}
	}
	if !bodyAllowed(w.status) {
		return h
	}
	if _, ok := h["Content-Type"]; !ok && len(w.buf) > 0 {
		h["Content-Type"] = []string{http.DetectContentType(w.buf)}
	}
	if _, ok := h["Content-Length"]; !ok && whole && len(h["Trailer"]) == 0 {
		h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
	}
	return h
}

// trailers is the trailer block the handler set: the fields it declared
// in its Trailer header, and those named with http.TrailerPrefix.
func (w *responseWriter) trailers() http.Header {
	var t http.Header
	add := func(k string, vs []string) {
		if len(vs) == 0 {
			return
		}
		if t == nil {
			t = http.Header{}
		}
		t[http.CanonicalHeaderKey(k)] = vs
	}
	for _, v := range w.hdr["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			add(k, w.hdr[k])
		}
	}
	for k, vs := range w.hdr {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			add(strings.TrimPrefix(k, http.TrailerPrefix), vs)
		}
	}
	return t
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// writeHeaders queues a HEADERS frame, and CONTINUATION frames if the
// block does not fit one frame: the status (0 for trailers) and hdr's
// fields less the connection-specific ones and undeclared trailers.
func (c *conn) writeHeaders(st *stream, status int, hdr http.Header, end bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || st.gone {
		return errStreamGone
	}
	c.hbuf = c.hbuf[:0]
	if status != 0 {
		c.hbuf = appendField(c.hbuf, ":status", statusText(status))
	}
	for k, vs := range hdr {
		name, ok := fieldName(k, status == 0)
		if !ok {
			continue
		}
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				c.hbuf = appendField(c.hbuf, name, v)
			}
		}
	}
	block := c.hbuf
	first := true
	for first || len(block) > 0 {
		n := min(len(block), int(c.peerFrame))
		frag, rest := block[:n], block[n:]
		if first {
			_ = c.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: frag, EndStream: end, EndHeaders: len(rest) == 0})
		} else {
			_ = c.wfr.WriteContinuation(st.id, len(rest) == 0, frag)
		}
		block, first = rest, false
	}
	if end {
		c.serverEndsLocked(st)
	}
	c.kick()
	return nil
}

// fieldName is the lower-case name under which header field k is sent,
// and false for a field not sent: a connection-specific one, or a
// trailer's in the header (or a header's in the trailers).
func fieldName(k string, trailer bool) (string, bool) {
	if strings.HasPrefix(k, http.TrailerPrefix) {
		if !trailer {
			return "", false
		}
		k = strings.TrimPrefix(k, http.TrailerPrefix)
	}
	name := lower(k)
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return "", false
	case "trailer":
		return name, !trailer
	}
	return name, httpguts.ValidHeaderFieldName(name)
}

// writeData queues p as DATA frames as the stream's and the connection's
// send windows and the client's frame size allow, waiting for the
// windows, and for the writer when maxQueued bytes wait for it; end ends
// the stream with the last.
func (c *conn) writeData(st *stream, p []byte, end bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for !c.dead && !st.gone && (len(c.out) >= maxQueued || len(p) > 0 && (st.send <= 0 || c.sendConn <= 0)) {
			c.sendWaiters++
			c.cond.Wait()
			c.sendWaiters--
		}
		if c.dead || st.gone {
			return errStreamGone
		}
		n := min(int64(len(p)), st.send, c.sendConn, int64(c.peerFrame))
		last := end && n == int64(len(p))
		_ = c.wfr.WriteData(st.id, last, p[:n])
		st.send -= n
		c.sendConn -= n
		p = p[n:]
		if last {
			c.serverEndsLocked(st)
		}
		c.kick()
		if len(p) == 0 {
			return nil
		}
	}
}

// serverEnds notes the end of the server's side of st: the stream closes,
// reset with NO_ERROR if the client has not ended its side (RFC 9113
// §8.1: the response is complete, the rest of the request is not needed).
func (c *conn) serverEnds(st *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverEndsLocked(st)
}

// serverEndsLocked is serverEnds, under mu. A frame that ends the stream
// closes it as it is queued: a client that reads the end and opens the
// next stream at once finds the stream's place free (MaxConcurrentStreams).
func (c *conn) serverEndsLocked(st *stream) {
	if st.gone {
		return
	}
	if !st.clientDone {
		c.writeResetLocked(st.id, http2.ErrCodeNo, "")
	}
	c.removeLocked(st, errStreamGone)
}

// statusText is the :status value of code.
func statusText(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNoContent:
		return "204"
	case http.StatusNotFound:
		return "404"
	}
	return strconv.Itoa(code)
}

// httpDate is the Date of a response sent now, formatted once a second.
func httpDate() string {
	now := time.Now().Unix()
	if d := lastDate.Load(); d != nil && d.sec == now {
		return d.text
	}
	d := &date{sec: now, text: time.Unix(now, 0).UTC().Format(http.TimeFormat)}
	lastDate.Store(d)
	return d.text
}

type date struct {
	sec  int64
	text string
}

var lastDate atomic.Pointer[date]
