package front

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"reflect"
)

// A request net/http serves carries what the front keeps for it in one
// value of its context, made as the request enters (handlerWorkers): its
// HTTP/2 connection's watch, the gate's ticket, and its parking once it
// is admitted. One value rather than a context for each: every
// Request.WithContext copies the request.
type netRequest struct {
	// watch is the request's HTTP/2 connection, nil on any other.
	watch *resetWatch
	// ticket is set (ticket.w) when its stream was gated.
	ticket h2ticket
	// parking is set (parking.g) once the request is admitted.
	parking parking
}

// netRequestKey is the request context's key for its netRequest.
type netRequestKey struct{}

// netRequestCtx is a request's context with its netRequest. It answers
// for the parking too (parkKey), so that Park and Work find it.
type netRequestCtx struct {
	context.Context
	r netRequest
}

func (c *netRequestCtx) Value(key any) any {
	switch key.(type) {
	case netRequestKey:
		return &c.r
	case parkKey:
		if c.r.parking.g != nil {
			return &c.r.parking
		}
	}
	return c.Context.Value(key)
}

// entered gives r, answered by rw, its netRequest, with a ticket if its
// stream was gated; the caller decides the ticket, if admission has not,
// once the handler returns.
func entered(rw http.ResponseWriter, r *http.Request) (*http.Request, *netRequest) {
	c := &netRequestCtx{Context: r.Context()}
	if w, ok := r.Context().Value(h2Conn{}).(*resetWatch); ok {
		c.r.watch = w
		if w.gate != nil && r.ProtoMajor == 2 {
			c.r.ticket.w, c.r.ticket.id = w, streamID(rw)
		}
	}
	return r.WithContext(c), &c.r
}

// streamID is the id of the HTTP/2 stream rw answers, or 0 if it is not
// known: surge's server names it (h2's StreamID); net/http's names it
// nowhere but its writer's state, rws.stream.id, which a test holds to
// the toolchain's net/http (TestStreamIDOfBothServers).
func streamID(rw http.ResponseWriter) uint32 {
	if s, ok := rw.(interface{ StreamID() uint32 }); ok {
		return s.StreamID()
	}
	v := reflect.ValueOf(rw)
	for _, name := range [...]string{"rws", "stream", "id"} {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return 0
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return 0
		}
		// Direct fields only: a field promoted from an embedded struct
		// is another writer's, and reaching it through a nil embedded
		// pointer panics.
		f, ok := v.Type().FieldByName(name)
		if !ok || len(f.Index) != 1 {
			return 0
		}
		v = v.Field(f.Index[0])
	}
	if v.Kind() != reflect.Uint32 {
		return 0
	}
	return uint32(v.Uint())
}

// netRequestOf is ctx's netRequest, or nil.
func netRequestOf(ctx context.Context) *netRequest {
	r, _ := ctx.Value(netRequestKey{}).(*netRequest)
	return r
}

// parkedNet gives req a parking for h, which the caller ends once the
// handler returns: in req's netRequest if it has one, else in a context
// of its own.
func (g *guard) parkedNet(req *http.Request, h hold) (*http.Request, *parking) {
	if r := netRequestOf(req.Context()); r != nil && r.parking.g == nil {
		r.parking.g, r.parking.h = g, h
		return req, &r.parking
	}
	ctx, p := g.parked(req.Context(), h)
	return req.WithContext(ctx), p
}

// clientAddr is the address req came from: its HTTP/2 connection's,
// known once for all its streams, or else parsed from req.RemoteAddr.
func clientAddr(req *http.Request) netip.Addr {
	if r := netRequestOf(req.Context()); r != nil && r.watch != nil {
		return r.watch.peer
	}
	return addrOf(remoteAddr(req.RemoteAddr))
}

// requestAddr is the net.Addr req came from, as clientAddr finds it.
func requestAddr(req *http.Request) net.Addr {
	if r := netRequestOf(req.Context()); r != nil && r.watch != nil {
		return r.watch.RemoteAddr()
	}
	return remoteAddr(req.RemoteAddr)
}

// wholeBody is a request body admission has read whole into memory:
// NetHandler takes its bytes as they are rather than copying them.
type wholeBody struct {
	*bytes.Reader
	b []byte
}

func newWholeBody(b []byte) wholeBody { return wholeBody{Reader: bytes.NewReader(b), b: b} }

// Close does nothing: the body is in memory.
func (wholeBody) Close() error { return nil }

// unread is the body's bytes if none has been read yet.
func (b wholeBody) unread() ([]byte, bool) { return b.b, b.Len() == len(b.b) }
