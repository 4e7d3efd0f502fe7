package rpc

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzipped requests, as connect-go does
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/gen/surge/wallet/v1/walletv1connect"
	"github.com/surge-dev/surge/internal/wallet/rpc/vtcodec"
)

// maxMessageBytes bounds a request message; the largest legitimate one (a
// chat message of social.MaxText bytes) is far smaller.
const maxMessageBytes = 64 << 10

// streamWorkers is how many long-lived goroutines serve gRPC calls. By
// default grpc-go starts a goroutine per call, whose stack then grows
// twice or three times on the way through the transport, the interceptors
// and the handler, and runtime.copystack stood out in GetBalance's
// profile. A worker keeps its grown stack from call to call, which cut the
// server's CPU per call in every back-to-back A/B pair (docs/BENCHMARKS.md,
// "Figures behind the code"). Calls beyond this many at once get a
// goroutine of their own.
const streamWorkers = 32

// healthName is the standard gRPC health service.
const healthName = "grpc.health.v1.Health"

// serviceNames are the services reflection lists and health reports on.
var serviceNames = []string{
	walletv1connect.AuthServiceName,
	walletv1connect.WalletServiceName,
	walletv1connect.FriendServiceName,
	walletv1connect.ChatServiceName,
	healthName,
}

// compressMinBytes is the smallest reply that is compressed when the client
// accepts compression.
const compressMinBytes = 4096

// methods are every RPC surge serves: the four services and health.
func (s *Service) methods() []method {
	auth, wallet, friend, chat := authService{s}, walletService{s}, friendService{s}, chatService{s}
	const public = true
	return []method{
		unary(s, walletv1connect.AuthServiceRegisterProcedure, public, auth.Register),
		unary(s, walletv1connect.AuthServiceLoginProcedure, public, auth.Login),
		unary(s, walletv1connect.WalletServiceGetBalanceProcedure, !public, wallet.GetBalance),
		unary(s, walletv1connect.WalletServiceTransferProcedure, !public, wallet.Transfer),
		unary(s, walletv1connect.WalletServiceGetHistoryProcedure, !public, wallet.GetHistory),
		unary(s, walletv1connect.WalletServiceRemindTransferProcedure, !public, wallet.RemindTransfer),
		unary(s, walletv1connect.WalletServiceGetRemindersProcedure, !public, wallet.GetReminders),
		unary(s, walletv1connect.FriendServiceAddFriendProcedure, !public, friend.AddFriend),
		unary(s, walletv1connect.FriendServiceAcceptFriendProcedure, !public, friend.AcceptFriend),
		unary(s, walletv1connect.FriendServiceRejectFriendProcedure, !public, friend.RejectFriend),
		unary(s, walletv1connect.FriendServiceRemoveFriendProcedure, !public, friend.RemoveFriend),
		unary(s, walletv1connect.FriendServiceGetFriendListProcedure, !public, friend.GetFriendList),
		unary(s, walletv1connect.FriendServiceGetChatFriendListProcedure, !public, friend.GetChatFriendList),
		unary(s, walletv1connect.ChatServiceSendMessageProcedure, !public, chat.SendMessage),
		unary(s, walletv1connect.ChatServiceGetMessagesProcedure, !public, chat.GetMessages),
		unary(s, walletv1connect.ChatServiceMarkReadProcedure, !public, chat.MarkRead),
		serverStream(s, walletv1connect.ChatServiceSubscribeProcedure, !public, chat.Subscribe),
		unary(s, "/"+healthName+"/Check", public, healthCheck),
		serverStream(s, "/"+healthName+"/Watch", public, healthWatch),
	}
}

// Handler returns the connect-go handler of every RPC route: the four
// services, server reflection (v1 and v1alpha) and grpc.health.v1.
func (s *Service) Handler() http.Handler {
	opts := []connect.HandlerOption{
		connect.WithReadMaxBytes(maxMessageBytes),
		// Replies are small (a balance, a page of history); gzipping them
		// cost a large share of a GetBalance's server CPU under ghz, which
		// asks for gzip (pprof), for a few bytes saved.
		connect.WithCompressMinBytes(compressMinBytes),
	}
	mux := http.NewServeMux()
	for _, m := range s.methods() {
		mux.Handle(m.procedure, m.connect(append(opts, schemaOptions(m.procedure)...)...))
	}
	reflector := grpcreflect.NewStaticReflector(serviceNames...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	return mux
}

// GRPCServer returns a grpc-go server of every RPC, reflection included,
// for the connections whose first request is gRPC; opts add to its own.
func (s *Service) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	own := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.ForceServerCodecV2(serverCodec{vtcodec.Server}),
	}
	srv := grpc.NewServer(append(own, opts...)...)
	descs := map[string]*grpc.ServiceDesc{}
	var order []string
	for _, m := range s.methods() {
		name := m.service()
		d, ok := descs[name]
		if !ok {
			d = &grpc.ServiceDesc{ServiceName: name, HandlerType: (*any)(nil)}
			descs[name] = d
			order = append(order, name)
		}
		if m.unary != nil {
			d.Methods = append(d.Methods, *m.unary)
		} else {
			d.Streams = append(d.Streams, *m.stream)
		}
	}
	for _, name := range order {
		srv.RegisterService(descs[name], nil) // nil: the handlers are closures
	}
	reflection.Register(srv)
	return srv
}

// schemaOptions give a connect handler what its generated constructor
// would: the method's descriptor, and its idempotency level, which lets
// Connect clients call side-effect-free methods with GET.
func schemaOptions(procedure string) []connect.HandlerOption {
	name := protoreflect.FullName(strings.ReplaceAll(procedure[1:], "/", "."))
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	md, ok := d.(protoreflect.MethodDescriptor)
	if err != nil || !ok {
		return nil
	}
	opts := []connect.HandlerOption{connect.WithSchema(md)}
	mo, _ := md.Options().(*descriptorpb.MethodOptions)
	switch mo.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS:
		opts = append(opts, connect.WithIdempotency(connect.IdempotencyNoSideEffects))
	case descriptorpb.MethodOptions_IDEMPOTENT:
		opts = append(opts, connect.WithIdempotency(connect.IdempotencyIdempotent))
	}
	return opts
}

// Owns reports whether Handler serves path: the wallet's services, gRPC
// health and reflection. It matches the path's first segment instead of
// using a ServeMux, so that the handlers beside it get every other request
// exactly as sent.
func Owns(path string) bool {
	return strings.HasPrefix(path, "/surge.wallet.v1.") ||
		strings.HasPrefix(path, "/grpc.health.v1.") ||
		strings.HasPrefix(path, "/grpc.reflection.")
}

// knownServices are the names grpc.health.v1 answers SERVING for: the
// server ("") and each of its services. The health methods are mounted
// only once recovery is done, so whoever reaches them is served.
var knownServices = func() map[string]bool {
	known := map[string]bool{"": true}
	for _, n := range serviceNames {
		known[n] = true
	}
	return known
}()

func healthCheck(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !knownServices[req.Service] {
		return nil, connect.NewError(connect.CodeNotFound, errUnknownService(req.Service))
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func healthWatch(ctx context.Context, req *healthpb.HealthCheckRequest, stream sender[healthpb.HealthCheckResponse]) error {
	res := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}
	if knownServices[req.Service] {
		res.Status = healthpb.HealthCheckResponse_SERVING
	}
	if err := stream.Send(res); err != nil {
		return err
	}
	front.Park(ctx)
	<-ctx.Done() // the status never changes while the server runs
	return nil
}
