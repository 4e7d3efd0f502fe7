package front

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
)

// maxHeaderList bounds one request's decoded header list (names, values
// and 32 bytes a field, RFC 9113 §6.5.2) on the gRPC server and net/http:
// ample for a bearer token, and small enough that a connection's streams
// together hold little. The libraries' defaults (16 MiB a stream in
// grpc-go, 1 MiB in net/http) let HPACK references to one table entry
// make each stream cost megabytes: grpc-go decodes a -bin value again for
// each reference. A -bin value is decoded from this list, so this bounds
// its decoding too.
const maxHeaderList = 16 << 10

// errSilentCall ends a gRPC call whose request message did not come
// within Limits.BodyTimeout.
var errSilentCall = errors.New("front: the call's request message did not arrive in time")

// silentKey holds, in a call's context, what stops its silence timer.
type silentKey struct{}

// timeSilentCalls is the gRPC server's tap: it gives each call a context
// that is cancelled if the call's first request message has not arrived
// within Limits.BodyTimeout, which ends the call (CANCELLED) and frees
// its stream. surge's RPCs are unary or server-streaming, so a client
// sends its one message at once; one that does not holds a stream and a
// goroutine for nothing. heard (from the interceptors) stops the timer.
func (g *guard) timeSilentCalls(ctx context.Context, _ *tap.Info) (context.Context, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(g.limits.BodyTimeout, func() { cancel(errSilentCall) })
	context.AfterFunc(ctx, func() { timer.Stop() })
	return context.WithValue(ctx, silentKey{}, timer), nil
}

// heard stops the silence timer of ctx's call, if it has one: its
// request message has arrived.
func heard(ctx context.Context) {
	if t, ok := ctx.Value(silentKey{}).(*time.Timer); ok {
		t.Stop()
	}
}

// admittedStream admits a streaming call once its first request message
// has arrived, as a body is admitted once it is whole: that message stops
// the call's silence timer and takes its place and work, so a client that
// opens streams and sends nothing holds none. The call's context carries
// its parking (Park).
type admittedStream struct {
	grpc.ServerStream
	g   *guard
	ctx context.Context // with the parking, once admitted
	p   *parking
}

func (s *admittedStream) Context() context.Context {
	if s.ctx != nil {
		return s.ctx
	}
	return s.ServerStream.Context()
}

func (s *admittedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err != nil || s.p != nil {
		return err
	}
	ctx := s.ServerStream.Context()
	heard(ctx)
	h, no := s.g.takeWork(peerAddr(ctx), 1)
	if no != nil {
		s.g.reject(no.reason)
		s.SetTrailer(s.g.grpcPushback())
		return errGRPCOverloaded
	}
	s.ctx, s.p = s.g.parked(ctx, h)
	return nil
}

// end gives back what the call holds once its handler has returned.
func (s *admittedStream) end() {
	if s.p != nil {
		s.p.end()
	}
}
