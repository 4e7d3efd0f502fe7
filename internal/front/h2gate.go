package front

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// An HTTP/2 client may queue far more requests than the server takes at
// once (Limits.MaxRequests), and Go's client does not wait at a
// connection's stream limit: it opens another connection. Every stream
// the server reads costs it a handler's goroutine and net/http's
// per-stream state before admission can refuse it, and a refused request
// comes back a second later (Retry-After) at the same cost. So the front
// reads a new stream's HEADERS only while the server has room for its
// request: requests in progress, streams read but whose handler has not
// started, and admitted HTTP/2 requests waiting for a place stay within
// MaxRequests. Until then the stream, and what follows it on its
// connection, waits unread in the client and the socket: the stream limit
// and TCP's flow control are the back-pressure, as a keep-alive
// connection's next request is for HTTP/1.1.
//
// A stream waits at most Limits.BodyTimeout to be read, and a request it
// carries at most as long again for a place; then it is admitted or
// refused as any request, 503 with Retry-After, so that overload that
// lasts still ends in refusals rather than in a wait without end.
//
// Only net/http's connections are gated: grpc-go bounds its own streams'
// handlers.
type h2gate struct {
	g       *guard
	mu      sync.Mutex
	readers sync.Cond // new streams waiting to be read
	ready   sync.Cond // admitted HTTP/2 requests waiting for a place
	// pending counts streams read whose handler has not started; waiting,
	// requests waiting for a place; blocked, goroutines in Wait.
	pending, waiting, blocked int64
}

func newH2Gate(g *guard) *h2gate {
	h := &h2gate{g: g}
	h.readers.L = &h.mu
	h.ready.L = &h.mu
	return h
}

// gated reports whether MaxRequests bounds requests, which the gate then
// keeps to.
func (h *h2gate) gated() bool { return h.g.limits.MaxRequests > 0 }

// roomLocked reports whether one more request fits.
func (h *h2gate) roomLocked() bool {
	return h.g.requests.used.Load()+h.pending+h.waiting < h.g.limits.MaxRequests
}

// enter waits, at most Limits.BodyTimeout, until a new stream's request
// fits or closed reports its connection closed, then counts the stream
// as pending until its handler starts.
func (h *h2gate) enter(closed func() bool) {
	if !h.gated() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waitLocked(&h.readers, time.Now().Add(h.g.limits.BodyTimeout), func() bool { return closed() || h.roomLocked() })
	h.pending++
	if h.roomLocked() {
		h.readers.Signal() // room for the next one too
	}
}

// started ends n streams' pending: their handlers started, or the server
// ended them without one.
func (h *h2gate) started(n int64) {
	if n == 0 {
		return
	}
	h.mu.Lock()
	h.pending -= n
	h.wakeLocked()
	h.mu.Unlock()
}

// waitLocked waits on c until ok or the deadline.
func (h *h2gate) waitLocked(c *sync.Cond, deadline time.Time, ok func() bool) {
	if ok() {
		return
	}
	t := time.AfterFunc(time.Until(deadline), func() {
		h.mu.Lock()
		c.Broadcast()
		h.mu.Unlock()
	})
	defer t.Stop()
	h.blocked++
	for !ok() && time.Now().Before(deadline) {
		c.Wait()
	}
	h.blocked--
}

// leave wakes the streams waiting to be read, so that those of a closed
// connection stop waiting.
func (h *h2gate) leave() {
	h.mu.Lock()
	h.readers.Broadcast()
	h.mu.Unlock()
}

// freed wakes a waiter once a request's place is given back: a request
// waiting for a place first, else a stream waiting to be read.
func (h *h2gate) freed() {
	h.mu.Lock()
	h.wakeLocked()
	h.mu.Unlock()
}

func (h *h2gate) wakeLocked() {
	if h.blocked == 0 {
		return
	}
	if h.waiting > 0 {
		h.ready.Signal()
		return
	}
	h.readers.Signal()
}

// takeWork takes a place and work for req, of client with units of work.
// An HTTP/2 request that MaxRequests refuses waits for a place instead, as
// long as a stream may wait to be read, or until its stream ends.
func (h *h2gate) takeWork(req *http.Request, client netip.Addr, units int64) (hold, *refusal) {
	held, no := h.g.takeWork(client, units)
	if no != refuseRequests || req.ProtoMajor != 2 || !h.gated() {
		return held, no
	}
	ctx := req.Context()
	deadline := time.Now().Add(h.g.limits.BodyTimeout)
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.ready.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	h.mu.Lock()
	h.waiting++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.waiting--
		h.wakeLocked()
		h.mu.Unlock()
	}()
	for {
		h.mu.Lock()
		h.waitLocked(&h.ready, deadline, func() bool {
			return ctx.Err() != nil || h.g.requests.used.Load() < h.g.limits.MaxRequests
		})
		h.mu.Unlock()
		held, no = h.g.takeWork(client, units)
		if no != refuseRequests || ctx.Err() != nil || !time.Now().Before(deadline) {
			return held, no
		}
	}
}

// h2Conn is the request context's key for its connection's watch.
type h2Conn struct{}

// connContext gives the requests of an HTTP/2 connection the front
// watches their connection's watch (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if w, ok := c.(*resetWatch); ok && w.gate != nil {
		return context.WithValue(ctx, h2Conn{}, w)
	}
	return ctx
}

// handlerStarted ends the pending of one stream of r's connection, if the
// gate counted it.
func handlerStarted(r *http.Request) {
	if r.ProtoMajor != 2 {
		return
	}
	if w, ok := r.Context().Value(h2Conn{}).(*resetWatch); ok {
		w.handlerStarted()
	}
}
