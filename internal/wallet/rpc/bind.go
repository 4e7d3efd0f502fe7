package rpc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/surge-dev/surge/internal/wallet/social"
)

// Every RPC is written once, as a function of its request message, and
// bound to two transports:
//
//   - connect-go, on net/http: gRPC-Web, Connect (JSON or binary) and
//     gRPC from clients whose connection began with something else;
//   - grpc-go's own HTTP/2 server, for connections whose first request is
//     gRPC (see package front). It costs about half of what connect-go on
//     net/http's HTTP/2 server costs per call (docs/BENCHMARKS.md), which
//     is most of a wallet read's CPU.
//
// Both bindings authenticate the call, time it into the RPC metrics and
// give the method the same context, so a method cannot tell them apart.

// method is one RPC bound to both transports.
type method struct {
	procedure string // "/surge.wallet.v1.WalletService/GetBalance"
	connect   func(opts ...connect.HandlerOption) http.Handler
	unary     *grpc.MethodDesc // or
	stream    *grpc.StreamDesc
}

// service is the part of a procedure before its method name.
func (m *method) service() string {
	return m.procedure[1:strings.LastIndexByte(m.procedure, '/')]
}

func methodName(procedure string) string {
	return procedure[strings.LastIndexByte(procedure, '/')+1:]
}

// call is what a transport knows of a call before its method runs.
type call struct {
	authorization string // the "authorization" header or metadata
	peer          string // the client's host:port (grpc-go: found by clientAddr)
	public        bool   // served without a token: signing in, health
}

// begin authenticates c and returns the context its method runs in.
func (s *Service) begin(ctx context.Context, c call) (context.Context, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	info := &callInfo{peer: c.peer}
	if !c.public {
		token, ok := strings.CutPrefix(c.authorization, "Bearer ")
		if !ok || token == "" {
			return nil, errNoToken
		}
		id, err := s.tokens.Verify(token)
		if err != nil {
			return nil, errBadToken
		}
		info.user = social.UserID(id)
	}
	return context.WithValue(ctx, callInfoKey{}, info), nil
}

// unary binds fn, the method of procedure.
func unary[Req, Res any](s *Service, procedure string, public bool, fn func(context.Context, *Req) (*Res, error)) method {
	run := func(ctx context.Context, c call, req *Req) (*Res, error) {
		start := time.Now()
		ctx, err := s.begin(ctx, c)
		var res *Res
		if err == nil {
			res, err = fn(ctx, req)
		}
		s.metrics.observe(procedure, start, err, true)
		return res, err
	}
	onConnect := func(ctx context.Context, req *connect.Request[Req]) (*connect.Response[Res], error) {
		res, err := run(ctx, connectCall(public, req.Header(), req.Peer()), req.Msg)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(res), nil
	}
	onGRPC := func(ctx context.Context, req any) (any, error) {
		res, err := run(ctx, grpcCall(ctx, public), req.(*Req))
		if err != nil {
			return nil, grpcError(err)
		}
		return res, nil
	}
	return method{
		procedure: procedure,
		connect: func(opts ...connect.HandlerOption) http.Handler {
			return connect.NewUnaryHandler(procedure, onConnect, opts...)
		},
		unary: new(UnaryDesc[Req](procedure, onGRPC)),
	}
}

// UnaryDesc describes procedure to grpc-go: it decodes a Req and runs h
// through the server's interceptors.
func UnaryDesc[Req any](procedure string, h grpc.UnaryHandler) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: methodName(procedure),
		Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			req := new(Req)
			if err := dec(req); err != nil {
				return nil, err
			}
			if err := takeDecodeError(req); err != nil {
				return nil, err
			}
			if icpt == nil {
				return h(ctx, req)
			}
			return icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: procedure}, h)
		},
	}
}

// sender is a server stream as its method sees it.
type sender[Res any] interface {
	// Open sends the stream's headers, so that the client knows the
	// stream is open before the first message.
	Open() error
	Send(*Res) error
}

// serverStream binds fn, the server-streaming method of procedure.
func serverStream[Req, Res any](s *Service, procedure string, public bool, fn func(context.Context, *Req, sender[Res]) error) method {
	run := func(ctx context.Context, c call, req *Req, out sender[Res]) error {
		ctx, err := s.begin(ctx, c)
		if err == nil {
			err = fn(ctx, req, out)
		}
		s.metrics.observe(procedure, time.Time{}, err, false)
		return err
	}
	onConnect := func(ctx context.Context, req *connect.Request[Req], stream *connect.ServerStream[Res]) error {
		return run(ctx, connectCall(public, req.Header(), req.Peer()), req.Msg, connectSender[Res]{stream})
	}
	onGRPC := func(_ any, stream grpc.ServerStream) error {
		req := new(Req)
		if err := stream.RecvMsg(req); err != nil {
			return err
		}
		if err := takeDecodeError(req); err != nil {
			return err
		}
		ctx := stream.Context()
		return grpcError(run(ctx, grpcCall(ctx, public), req, grpcSender[Res]{stream}))
	}
	return method{
		procedure: procedure,
		connect: func(opts ...connect.HandlerOption) http.Handler {
			return connect.NewServerStreamHandler(procedure, onConnect, opts...)
		},
		stream: &grpc.StreamDesc{
			StreamName:    methodName(procedure),
			ServerStreams: true,
			Handler:       onGRPC, // grpc-go runs its stream interceptors around it
		},
	}
}

func connectCall(public bool, h http.Header, p connect.Peer) call {
	return call{authorization: h.Get("Authorization"), peer: p.Addr, public: public}
}

// grpcCall leaves the peer out: only sign-ins need it, and clientAddr
// finds it in grpc-go's context.
func grpcCall(ctx context.Context, public bool) call {
	c := call{public: public}
	// ValueFromIncomingContext, unlike FromIncomingContext, copies no map.
	if v := metadata.ValueFromIncomingContext(ctx, "authorization"); len(v) > 0 {
		c.authorization = v[0]
	}
	return c
}

type connectSender[Res any] struct{ s *connect.ServerStream[Res] }

func (c connectSender[Res]) Open() error       { return c.s.Send(nil) } // connect sends headers only
func (c connectSender[Res]) Send(m *Res) error { return c.s.Send(m) }

type grpcSender[Res any] struct{ s grpc.ServerStream }

func (g grpcSender[Res]) Open() error       { return g.s.SendHeader(nil) }
func (g grpcSender[Res]) Send(m *Res) error { return g.s.SendMsg(m) }

// grpcError converts the connect-go errors the methods return (codes,
// messages and google.rpc details are the same on the wire) to grpc-go's.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return status.Error(codes.Unknown, err.Error())
	}
	st := &spb.Status{Code: int32(ce.Code()), Message: ce.Message()}
	for _, d := range ce.Details() {
		st.Details = append(st.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
	}
	return status.ErrorProto(st)
}
