package front

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// An HTTP/2 client may queue far more requests than the server takes at
// once (Limits.MaxRequests), and Go's client does not wait at a
// connection's stream limit: it opens another connection. Every stream
// the server reads costs it a handler's goroutine and the server's
// per-stream state before admission can refuse it, and a refused request
// comes back after its Retry-After at the same cost. So the front gives
// the server a new stream's HEADERS only while the server has room for
// its request: requests in progress, streams the server has been given
// and admission has not decided on, and HTTP/2 requests waiting for a
// place stay within MaxRequests. A stream counts from its HEADERS, its
// body still to come, until admission decides on its request or the
// stream ends, once (resetWatch.release). Until there is room the
// stream waits parked in the front (h2park.go), and the streams after it
// in the client and the socket: the stream limit and TCP's flow control
// are the back-pressure, as a keep-alive connection's next request is
// for HTTP/1.1.
//
// A stream waits while the server gives places back: once none has come
// back for h2Stall since the wait began (requests that hold their places
// and do not end), or after Limits.BodyTimeout in all, it goes to the
// server and its request is admitted or refused as any other, 503 with
// Retry-After. A request that finds no place then waits the same way,
// up to maxConnWaiting of a connection's at once. So a burst the server
// works through waits in the client; a server whose places are held
// refuses within h2Stall, and then, until a place is given back, at
// once.
//
// Only the connections of the front's HTTP/2 servers (surge's and
// net/http's) are gated: grpc-go bounds its own streams' handlers.
type h2gate struct {
	g  *guard
	mu sync.Mutex
	// readers are the wakes of the connections' readers that wait for
	// room for a parked stream, the next to wake first.
	readers []*sync.Cond
	ready   sync.Cond // admitted HTTP/2 requests waiting for a place
	// pending counts streams the server has been given and admission has
	// not decided on; waiting, requests waiting for a place: both grow
	// under mu, and are read without it by a place given back (room).
	pending, waiting atomic.Int64
	// blocked counts goroutines in Wait.
	blocked int64
	// attention counts the goroutines in waitLocked, and one more while
	// stalled: while it is 0 a place given back needs no lock.
	attention atomic.Int64
	// gen grows whenever room has come (a place given back, a stream
	// decided, a request's wait ended, each once it leaves room; a stall)
	// while parked counts a reader with parked frames, so that such a
	// reader whose stream found no room asks again only then (tryEnter).
	// With none parked, a place given back writes nothing shared.
	gen    atomic.Uint64
	parked atomic.Int64
	// freedAt is when a place was last given back.
	freedAt time.Time
	// stall is how long a wait lasts without a place given back: h2Stall.
	// stalled is set when a wait ends so, until a place is given back:
	// meanwhile nothing waits.
	stall   time.Duration
	stalled bool
}

// h2Stall is how long a stream or request waits for a place without any
// being given back before it is refused: the second a refusal's
// Retry-After asks for.
const h2Stall = time.Second

func newH2Gate(g *guard) *h2gate {
	h := &h2gate{g: g, stall: h2Stall}
	h.ready.L = &h.mu
	return h
}

// gated reports whether MaxRequests bounds requests, which the gate then
// keeps to.
func (h *h2gate) gated() bool { return h.g.limits.MaxRequests > 0 }

// room reports whether one more request fits.
func (h *h2gate) room() bool {
	return h.g.requests.used.Load()+h.pending.Load()+h.waiting.Load() < h.g.limits.MaxRequests
}

// tryEnter counts a new stream pending if its request fits, or while the
// gate is stalled, or once its wait, if it began one at begun, has ended
// (endLocked), and reports whether it did; if not, until is when the wait
// ends unless gen grows first (zero for a stream not waiting).
func (h *h2gate) tryEnter(begun time.Time) (entered bool, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.room() && !h.stalled {
		if begun.IsZero() {
			return false, until
		}
		if end, ended := h.endLocked(begun); !ended {
			return false, end
		}
	}
	h.pending.Add(1)
	return true, until
}

// force counts a new stream pending whether or not its request fits: a
// reader whose parked frames fill maxParked lets its first parked stream
// in, and the request waits for a place in takeWork.
func (h *h2gate) force() {
	h.mu.Lock()
	h.pending.Add(1)
	h.mu.Unlock()
}

// enter waits, for a reader whose wakes come on wake, until its first
// parked stream, waiting since begun, fits or its wait ends (waitLocked),
// and counts the stream pending then. It returns false, counting nothing,
// if other reports true first with no room.
func (h *h2gate) enter(wake *sync.Cond, begun time.Time, other func() bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readers = append(h.readers, wake)
	// room is what ended the wait, if ok did: places are taken without
	// the lock, so asking again could find none.
	var room bool
	ok := h.waitLocked(wake, begun, func() bool { room = h.room(); return room || other() })
	h.readers = slices.DeleteFunc(h.readers, func(c *sync.Cond) bool { return c == wake })
	if ok && !room {
		return false
	}
	h.pending.Add(1)
	return true
}

// decided ends n streams' pending: admission decided on their requests,
// or the server ended them without one. As a place given back (freed),
// it takes the lock only while something waits in waitLocked: a waiter
// counts itself before it asks for room, so it sees the count lowered
// here or is woken.
func (h *h2gate) decided(n int64) {
	if n == 0 {
		return
	}
	h.pending.Add(-n)
	h.roomMayCome()
	if h.attention.Load() == 0 {
		return
	}
	h.mu.Lock()
	h.wakeLocked()
	h.mu.Unlock()
}

// waitLocked waits on c until ok, and reports true then; or until no
// place has been given back for h.stall since the wait began, or
// Limits.BodyTimeout has passed, and reports false. Once a wait has ended
// for want of a place given back, none waits until one is.
func (h *h2gate) waitLocked(c *sync.Cond, begun time.Time, ok func() bool) bool {
	// Counted before ok is asked: a place given back after this is seen
	// by ok or wakes the wait.
	h.attention.Add(1)
	defer h.attention.Add(-1)
	for !ok() {
		if h.stalled {
			return false
		}
		end, ended := h.endLocked(begun)
		if ended {
			return false
		}
		t := time.AfterFunc(time.Until(end), func() {
			h.mu.Lock()
			c.Broadcast()
			h.mu.Unlock()
		})
		h.blocked++
		c.Wait()
		h.blocked--
		t.Stop()
	}
	return true
}

// endLocked is when a wait begun then ends if no place comes, and
// whether it has; a wait that has ended for want of a place given back
// stalls the gate.
func (h *h2gate) endLocked(begun time.Time) (time.Time, bool) {
	end, stall := h.waitEnd(begun)
	if time.Now().Before(end) {
		return end, false
	}
	if stall && !h.stalled {
		h.stalled = true
		h.attention.Add(1)
		h.wakeParked() // a stalled gate lets streams in without room
	}
	return end, true
}

// waitEnd is when a wait begun then ends if no place comes, and whether
// that end is a stall.
func (h *h2gate) waitEnd(begun time.Time) (time.Time, bool) {
	progress := begun
	if h.freedAt.After(begun) {
		progress = h.freedAt
	}
	end := progress.Add(h.stall)
	if hard := begun.Add(h.g.limits.BodyTimeout); hard.Before(end) {
		return hard, false
	}
	return end, true
}

// leave wakes the reader whose wakes come on wake, so that it stops
// waiting once its connection is closed.
func (h *h2gate) leave(wake *sync.Cond) {
	h.mu.Lock()
	wake.Signal()
	h.mu.Unlock()
}

// freed wakes a waiter once a request's place is given back: a request
// waiting for a place first, else a reader whose stream waits.
func (h *h2gate) freed() {
	h.roomMayCome()
	if h.attention.Load() == 0 {
		return
	}
	h.mu.Lock()
	h.freedAt = time.Now()
	if h.stalled {
		h.stalled = false
		h.attention.Add(-1)
	}
	h.wakeLocked()
	h.mu.Unlock()
}

// roomMayCome tells the readers with parked frames that room has come,
// if it has: a place given back, or a stream or request counted no more,
// while requests and streams still fill MaxRequests lets no parked
// stream in, and asking the gate then would only take its lock. Whatever
// gives room counts itself out first and then asks, so the last of
// several at once sees the room they make together.
func (h *h2gate) roomMayCome() {
	if h.parked.Load() > 0 && h.room() {
		h.gen.Add(1)
	}
}

// wakeParked grows gen, which the readers with parked frames watch, if
// there are any.
func (h *h2gate) wakeParked() {
	if h.parked.Load() > 0 {
		h.gen.Add(1)
	}
}

func (h *h2gate) wakeLocked() {
	if h.blocked == 0 {
		return
	}
	if h.waiting.Load() > 0 {
		h.ready.Signal()
		return
	}
	if len(h.readers) > 0 {
		// The reader woken goes last: the next place wakes another, even
		// before this one has run.
		c := h.readers[0]
		copy(h.readers, h.readers[1:])
		h.readers[len(h.readers)-1] = c
		c.Signal()
	}
}

// takeWork takes a place and work for req, of client with units of work.
// An HTTP/2 request that MaxRequests refuses waits for a place instead,
// as a parked stream waits, or until its stream ends; unless
// maxConnWaiting of its connection's requests wait already.
func (h *h2gate) takeWork(req *http.Request, client netip.Addr, units int64) (hold, *refusal) {
	held, no := h.g.takeWork(client, units)
	t := ticketOf(req)
	if no != refuseRequests || req.ProtoMajor != 2 || !h.gated() || !t.wait() {
		t.decide() // after the place is taken: counted twice a moment, never none
		return held, no
	}
	defer t.waited()
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.ready.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	h.mu.Lock()
	h.waiting.Add(1)
	h.mu.Unlock()
	t.decide() // now waiting
	h.mu.Lock()
	defer h.mu.Unlock()
	defer func() {
		h.waiting.Add(-1)
		h.roomMayCome()
		h.wakeLocked()
	}()
	for {
		room := func() bool { return h.g.requests.used.Load() < h.g.limits.MaxRequests }
		h.waitLocked(&h.ready, time.Now(), func() bool { return ctx.Err() != nil || room() })
		if ctx.Err() != nil || !room() {
			return held, no // the stream ended, or the wait did
		}
		// Taking work gives it back on a refusal, which wakes waiters:
		// not under the lock.
		h.mu.Unlock()
		held, no = h.g.takeWork(client, units)
		h.mu.Lock()
		if no != refuseRequests {
			return held, no
		}
	}
}

// h2Conn is the request context's key for its connection's watch.
type h2Conn struct{}

// connContext gives the requests of an HTTP/2 connection the front
// watches their connection's watch (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if w, ok := c.(*resetWatch); ok {
		return context.WithValue(ctx, h2Conn{}, w)
	}
	return ctx
}

// h2ticket is a gated stream's request until admission decides on it:
// the stream counts as pending from its HEADERS until then, and the
// ticket ends that, at admission or at the handler's end, unless the
// stream's end or the connection's close has (resetWatch.release). A
// ticket without w is none: its stream was not gated. A ticket whose id
// is 0 does not know its stream (a server that names it nowhere the
// front can read): its stream's pending then ends with the stream, so
// while its handler runs the request counts twice, as a request and as
// pending, and a long response keeps its pending until it ends.
type h2ticket struct {
	w       *resetWatch
	id      uint32
	decided atomic.Bool
}

// decide ends the ticket's stream's pending, once.
func (t *h2ticket) decide() {
	if t != nil && t.w != nil && t.decided.CompareAndSwap(false, true) {
		t.w.release(t.id)
	}
}

// maxConnWaiting bounds the requests of one connection that wait for a
// place (takeWork). A request waits, its handler's goroutine held, only
// once the gate has let its stream in with no place for it: a stream a
// full park forces in (h2park.go), or one that lost a place taken
// without the gate's lock. A client that fills its park over and over
// can force in a stream per parked frame up to the server's stream
// limit; past this bound its requests are refused at once, as on a
// connection not gated, so that what it holds waiting is a few handlers
// per connection rather than the stream limit's.
const maxConnWaiting = 4

// wait counts the ticket's request among its connection's waiting for a
// place and reports true, or, with maxConnWaiting already waiting, counts
// nothing and reports false. A request without a ticket may wait.
func (t *h2ticket) wait() bool {
	if t == nil {
		return true
	}
	return t.w.waiting.take(1)
}

// waited ends the count that wait began.
func (t *h2ticket) waited() {
	if t != nil {
		t.w.waiting.give(1)
	}
}

// ticketOf is r's ticket, or nil.
func ticketOf(r *http.Request) *h2ticket {
	if nr := netRequestOf(r.Context()); nr != nil && nr.ticket.w != nil {
		return &nr.ticket
	}
	return nil
}
