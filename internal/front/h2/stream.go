package h2

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// stream is one request and its response. Its fields are guarded by its
// connection's mu.
type stream struct {
	c      *conn
	id     uint32
	cond   sync.Cond // body bytes came, the body ended, or a deadline passed
	cancel context.CancelFunc
	req    *http.Request
	h      http.Handler

	clientDone  bool  // the client ended its side (END_STREAM)
	gone        bool  // the stream is closed: reset, or ended on both sides
	err         error // why a body read fails: the stream or connection gone, or the body malformed
	body        []byte
	bodyOff     int
	recv        int64 // the stream's receive window, as granted
	unacked     int64 // body bytes read by the handler and not yet granted back
	send        int64 // the stream's send window
	declared    int64 // the request's content-length, -1 if none
	got         int64 // body bytes received
	deadline    *time.Timer
	deadlineGen int // the deadline's generation: a timer of an older one does nothing
	timedOut    bool
}

// onHeaders opens a stream, or ends one with trailers.
func (c *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return connError{http2.ErrCodeProtocol, "even stream id"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.streams[id]; st != nil {
		c.trailersLocked(st, f)
		return c.queuedControlLocked()
	}
	if id <= c.lastID {
		if c.resetByServer(id) {
			return nil
		}
		return connError{http2.ErrCodeStreamClosed, "headers on closed stream"}
	}
	c.lastID = id
	switch {
	case c.goingAway:
		return nil // past the GOAWAY's last stream: ignored (RFC 9113 §6.8)
	case f.HasPriority() && f.Priority.StreamDep == id:
		c.writeResetLocked(id, http2.ErrCodeProtocol, "priority_self")
		return c.queuedControlLocked()
	case uint32(len(c.streams)) >= c.srv.maxStreams():
		c.writeResetLocked(id, http2.ErrCodeRefusedStream, "over_max_streams")
		return c.queuedControlLocked()
	}
	var req http.Request // copied once, with the stream's context, by start
	declared, err := c.newRequest(f, &req)
	if err != nil {
		c.writeResetLocked(id, http2.ErrCodeProtocol, "malformed_headers")
		return c.queuedControlLocked()
	}
	st := c.openLocked(id, declared, f.StreamEnded())
	h := c.srv.Handler
	if f.Truncated {
		h = http.HandlerFunc(headersTooLarge)
	}
	st.start(h, &req)
	return nil
}

func headersTooLarge(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
}

// openLocked makes stream id's state.
func (c *conn) openLocked(id uint32, declared int64, ended bool) *stream {
	st := &stream{c: c, id: id, declared: declared, clientDone: ended,
		recv: int64(c.srv.streamWindow()), send: c.peerWindow}
	st.cond.L = &c.mu
	c.streams[id] = st
	if c.idle != nil && len(c.streams) == 1 {
		c.idle.Stop()
	}
	return st
}

// start runs the stream's handler on a goroutine of its own, with a copy
// of req that carries the stream's context.
func (st *stream) start(h http.Handler, req *http.Request) {
	ctx, cancel := context.WithCancel(st.c.ctx)
	st.cancel = cancel
	if !st.clientDone {
		req.Body = &requestBody{st: st}
	}
	st.req, st.h = req.WithContext(ctx), h
	st.c.srv.dispatch(st)
}

// trailersLocked takes a second HEADERS on an open stream: trailers, which
// must end the stream and carry no pseudo-header.
func (c *conn) trailersLocked(st *stream, f *http2.MetaHeadersFrame) {
	switch {
	case st.clientDone:
		c.resetLocked(st, http2.ErrCodeStreamClosed, "headers_half_closed")
		return
	case !f.StreamEnded() || len(f.PseudoFields()) > 0:
		c.resetLocked(st, http2.ErrCodeProtocol, "bad_trailers")
		return
	}
	if t := st.req.Trailer; t != nil {
		for _, hf := range f.RegularFields() {
			k := canonical(hf.Name)
			if _, declared := t[k]; declared {
				t[k] = append(t[k], hf.Value)
			}
		}
	}
	c.clientEndsLocked(st)
}

// clientEndsLocked ends the client's side of st, checking the body's
// length against its content-length.
func (c *conn) clientEndsLocked(st *stream) {
	if st.declared >= 0 && st.got != st.declared {
		c.resetLocked(st, http2.ErrCodeProtocol, "content_length_mismatch")
		return
	}
	st.clientDone = true
	st.cond.Broadcast()
}

// onData takes a DATA frame: flow control first, for the connection and
// then the stream, then the body.
func (c *conn) onData(f *http2.DataFrame) error {
	n := int64(f.Length)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > c.recvConn {
		return connError{http2.ErrCodeFlowControl, "connection window exceeded"}
	}
	c.recvConn -= n
	st := c.streams[f.StreamID]
	if st == nil || st.clientDone {
		c.grantConnLocked(n)
		switch {
		case f.StreamID > c.lastID:
			return connError{http2.ErrCodeProtocol, "data on idle stream"}
		case st != nil:
			c.resetLocked(st, http2.ErrCodeStreamClosed, "data_half_closed")
		case !c.resetByServer(f.StreamID):
			c.writeResetLocked(f.StreamID, http2.ErrCodeStreamClosed, "data_closed")
		}
		return c.queuedControlLocked()
	}
	if n > st.recv {
		c.grantConnLocked(n)
		c.resetLocked(st, http2.ErrCodeFlowControl, "stream window exceeded")
		return c.queuedControlLocked()
	}
	st.recv -= n
	data := f.Data()
	st.got += int64(len(data))
	if st.declared >= 0 && st.got > st.declared {
		c.grantConnLocked(n)
		c.resetLocked(st, http2.ErrCodeProtocol, "content_length_exceeded")
		return c.queuedControlLocked()
	}
	if pad := n - int64(len(data)); pad > 0 {
		st.unacked += pad
		c.grantLocked(st, pad)
	}
	if len(data) > 0 {
		st.body = append(st.body, data...)
		st.cond.Broadcast()
	}
	if f.StreamEnded() {
		c.clientEndsLocked(st)
	}
	return c.queuedControlLocked()
}

// grantLocked gives n consumed body bytes of st back to the client's
// windows, the stream's and the connection's, once half a window's worth
// has gathered.
func (c *conn) grantLocked(st *stream, n int64) {
	if !st.clientDone && !st.gone && st.unacked >= int64(c.srv.streamWindow())/2 {
		_ = c.wfr.WriteWindowUpdate(st.id, uint32(st.unacked))
		st.recv += st.unacked
		st.unacked = 0
		c.kick()
	}
	c.grantConnLocked(n)
}

// grantConnLocked gives n bytes back to the connection's window, once
// half the window's worth has gathered.
func (c *conn) grantConnLocked(n int64) {
	c.unackedConn += n
	if c.unackedConn >= int64(c.srv.connWindow())/2 && !c.final {
		_ = c.wfr.WriteWindowUpdate(0, uint32(c.unackedConn))
		c.recvConn += c.unackedConn
		c.unackedConn = 0
		c.kick()
	}
}

// resetLocked resets st with code, which the server sends.
func (c *conn) resetLocked(st *stream, code http2.ErrCode, kind string) {
	c.writeResetLocked(st.id, code, kind)
	c.removeLocked(st, errStreamGone)
}

// removeLocked closes st: its handler's reads and writes fail with err
// from now on, its unread body goes back to the connection's window, and
// its context is cancelled.
func (c *conn) removeLocked(st *stream, err error) {
	if st.gone {
		return
	}
	st.gone = true
	if st.err == nil {
		st.err = err
	}
	delete(c.streams, st.id)
	if unread := len(st.body) - st.bodyOff; unread > 0 {
		c.grantConnLocked(int64(unread))
	}
	st.body, st.bodyOff = nil, 0
	if st.deadline != nil {
		st.deadline.Stop()
	}
	if st.cancel != nil {
		st.cancel()
	}
	st.cond.Broadcast()
	c.wakeSendersLocked()
	if len(c.streams) == 0 {
		if c.idle != nil && !c.goingAway && !c.final {
			c.idle.Reset(c.srv.IdleTimeout)
		}
		c.closeIfDoneLocked()
	}
}
