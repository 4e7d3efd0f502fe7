package telemetry

import (
	"context"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// answerAsAsked is a unary gRPC method that fails with the code its
// caller names in the "want-code" metadata.
func answerAsAsked(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := new(emptypb.Empty)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, _ any) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		switch v := md.Get("want-code"); {
		case len(v) == 0:
			return &emptypb.Empty{}, nil
		case v[0] == "internal":
			return nil, status.Error(codes.Internal, "broken")
		default:
			return nil, status.Error(codes.PermissionDenied, "not yours")
		}
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/surge.wallet.v1.WalletService/GetBalance"}, h)
}

// TestGRPCCallsMetered: calls through a real grpc-go server with the
// middleware's options count as wallet requests, and only server faults
// count as failures.
func TestGRPCCallsMetered(t *testing.T) {
	m := NewMiddleware(nil, MiddlewareOptions{Registerer: prometheus.NewRegistry()})
	srv := grpc.NewServer(m.GRPC()...)
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "surge.wallet.v1.WalletService",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "GetBalance", Handler: answerAsAsked}},
	}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, want := range []string{"", "", "internal", "permission"} {
		ctx := context.Background()
		if want != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "want-code", want)
		}
		err := cc.Invoke(ctx, "/surge.wallet.v1.WalletService/GetBalance", &emptypb.Empty{}, &emptypb.Empty{})
		if (want == "") != (err == nil) {
			t.Fatalf("call asking for %q: %v", want, err)
		}
	}
	w := m.Meter().Take()[m.Meter().Index(WorkloadWallet)]
	if w.Requests != 4 || w.Errors != 1 {
		t.Errorf("wallet window %+v, want 4 requests and 1 error", w)
	}
}
