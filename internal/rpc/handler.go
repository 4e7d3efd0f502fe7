package rpc

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/surge-dev/surge/internal/gen/surge/wallet/v1/walletv1connect"
)

// maxMessageBytes bounds a request message; the largest legitimate one (a
// chat message of social.MaxText bytes) is far smaller.
const maxMessageBytes = 64 << 10

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

// Handler returns the handler of every RPC route: the four services,
// server reflection (v1 and v1alpha) and grpc.health.v1.
func (s *Service) Handler() http.Handler {
	opts := []connect.HandlerOption{
		connect.WithInterceptors(s.metrics, authInterceptor{s}),
		connect.WithReadMaxBytes(maxMessageBytes),
		// Replies are small (a balance, a page of history); gzipping them
		// cost ~30% of a GetBalance's server CPU under ghz, which asks for
		// gzip (pprof), for a few bytes saved.
		connect.WithCompressMinBytes(compressMinBytes),
	}
	mux := http.NewServeMux()
	mux.Handle(walletv1connect.NewAuthServiceHandler(authService{s}, opts...))
	mux.Handle(walletv1connect.NewWalletServiceHandler(walletService{s}, opts...))
	mux.Handle(walletv1connect.NewFriendServiceHandler(friendService{s}, opts...))
	mux.Handle(walletv1connect.NewChatServiceHandler(chatService{s}, opts...))
	reflector := grpcreflect.NewStaticReflector(serviceNames...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.Handle("/"+healthName+"/", healthHandler())
	return mux
}

// Route sends the RPC paths to rpc and everything else to fallback. It
// matches the path's first segment instead of using a ServeMux, so that
// fallback gets every other request exactly as sent.
func Route(rpc, fallback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRPCPath(r.URL.Path) {
			rpc.ServeHTTP(w, r)
			return
		}
		fallback.ServeHTTP(w, r)
	})
}

func isRPCPath(path string) bool {
	return strings.HasPrefix(path, "/surge.wallet.v1.") ||
		strings.HasPrefix(path, "/grpc.health.v1.") ||
		strings.HasPrefix(path, "/grpc.reflection.")
}

// healthHandler serves grpc.health.v1.Health: SERVING for the server ("")
// and each of its services, NOT_FOUND for any other name. The handler is
// mounted only once recovery is done, so whoever reaches it is served.
func healthHandler() http.Handler {
	known := make(map[string]bool, len(serviceNames)+1)
	known[""] = true
	for _, n := range serviceNames {
		known[n] = true
	}
	status := func(service string) (*healthpb.HealthCheckResponse, error) {
		if !known[service] {
			return nil, connect.NewError(connect.CodeNotFound, errUnknownService(service))
		}
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/"+healthName+"/Check", connect.NewUnaryHandler("/"+healthName+"/Check",
		func(_ context.Context, req *connect.Request[healthpb.HealthCheckRequest]) (*connect.Response[healthpb.HealthCheckResponse], error) {
			res, err := status(req.Msg.Service)
			if err != nil {
				return nil, err
			}
			return connect.NewResponse(res), nil
		}))
	mux.Handle("/"+healthName+"/Watch", connect.NewServerStreamHandler("/"+healthName+"/Watch",
		func(ctx context.Context, req *connect.Request[healthpb.HealthCheckRequest], stream *connect.ServerStream[healthpb.HealthCheckResponse]) error {
			res, err := status(req.Msg.Service)
			if err != nil {
				res = &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}
			}
			if err := stream.Send(res); err != nil {
				return err
			}
			<-ctx.Done() // the status never changes while the server runs
			return nil
		}))
	return mux
}
