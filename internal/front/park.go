package front

import (
	"context"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// A request that waits for something to happen rather than working, a
// reservation's long-poll, the dashboard's event stream, a chat stream, a
// WebSocket, a server-streaming RPC, parks: it gives back its place among
// the requests in progress (Limits.MaxRequests) and its work
// (Limits.MaxWork, its client's share) for as long as it waits, so that
// however many clients wait, they cannot shed the requests that work.
// Such a request holds only its connection (Limits.MaxConns) and its
// stream. What it does on waking, writing what it waited for, needs no
// place; a message that makes it work again (a chat message sent on a
// WebSocket) takes one for that work (Work) or is refused.

// parkKey holds a request's parking in its context.
type parkKey struct{}

// parking is what an admitted request holds while its handler runs, and
// whether its handler has parked it.
type parking struct {
	g      *guard
	h      hold
	parked atomic.Bool // set by the first of park and end
}

// park gives back p's place and work, once.
func (p *parking) park() {
	if p.parked.CompareAndSwap(false, true) {
		p.g.release(hold{work: p.h.work, request: p.h.request, clientWork: p.h.clientWork, client: p.h.client})
	}
}

// end gives back what p still holds once its handler has returned.
func (p *parking) end() {
	if p.parked.CompareAndSwap(false, true) {
		p.g.release(p.h)
		return
	}
	p.g.bodies.give(p.h.body)
}

// parked is ctx with a parking for h, which the caller ends once the
// handler returns. A handler may go on after its request's end (a
// WebSocket's reader), so a parking is never reused.
func (g *guard) parked(ctx context.Context, h hold) (context.Context, *parking) {
	p := &parking{g: g, h: h}
	return context.WithValue(ctx, parkKey{}, p), p
}

// parkedFast gives ctx's request a parking for h, which the caller ends
// once the handler returns: fasthttp's context holds it as a user value.
func (g *guard) parkedFast(ctx *fasthttp.RequestCtx, h hold) *parking {
	p := &parking{g: g, h: h}
	ctx.SetUserValue(parkKey{}, p)
	return p
}

// Park gives back the place and work of ctx's request (see above) while
// it waits; its handler calls it before a wait that may last, and need
// not call it again. It does nothing for a context no admitted request
// carries.
func Park(ctx context.Context) {
	if p, ok := ctx.Value(parkKey{}).(*parking); ok {
		p.park()
	}
}

// Work takes, for a parked request of ctx that has work to do, one place
// and one unit of work, as a new request would, and returns the function
// that gives them back; false means the server is at capacity and the
// work is refused. A context no admitted request carries works
// unbounded.
func Work(ctx context.Context) (func(), bool) {
	p, ok := ctx.Value(parkKey{}).(*parking)
	if !ok {
		return func() {}, true
	}
	g := p.g
	h, no := g.takeWork(p.h.client, 1)
	if no != nil {
		g.reject(no.reason)
		return nil, false
	}
	return func() { g.release(h) }, true
}
