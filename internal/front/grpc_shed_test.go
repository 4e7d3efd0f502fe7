package front

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TestGRPCCallsPastMaxWorkAreShed holds the whole work budget (MaxWork 2),
// or every place for a request (MaxRequests 2), with two server streams of
// grpc-go: a third call, unary or streaming, is refused at once,
// UNAVAILABLE with a second's pushback, as a request over net/http or
// fasthttp would get 503 with Retry-After: 1.
func TestGRPCCallsPastMaxWorkAreShed(t *testing.T) {
	for name, l := range map[string]Limits{
		"work":     {MaxWork: 2, MaxWorkPerClient: 2},
		"requests": {MaxRequests: 2},
	} {
		t.Run(name, func(t *testing.T) { testGRPCShed(t, l) })
	}
}

func testGRPCShed(t *testing.T, l Limits) {
	adm := NewAdmission(l, nil)
	grpcSrv := grpc.NewServer(adm.GRPCOptions(time.Minute)...)
	healthpb.RegisterHealthServer(grpcSrv, health.NewServer())
	srv := New(Options{GRPC: grpcSrv, Net: http.NotFoundHandler(), Admission: adm, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute})
	cc, err := grpc.NewClient("passthrough:///"+serveFront(t, srv), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	watching, stop := context.WithCancel(ctx)
	for range 2 {
		w, err := client.Watch(watching, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The first status means the handler runs, holding its unit.
		if _, err := w.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	var trailer metadata.MD
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a call past the work budget: %v; want UNAVAILABLE", err)
	}
	if got := trailer.Get("grpc-retry-pushback-ms"); len(got) != 1 || got[0] != "1000" {
		t.Errorf("pushback trailer %q, want 1000 ms", got)
	}
	// A streaming call is refused the same way.
	w, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("a stream past the work budget: %v; want UNAVAILABLE", err)
	}
	if got := w.Trailer().Get("grpc-retry-pushback-ms"); len(got) != 1 || got[0] != "1000" {
		t.Errorf("stream's pushback trailer %q, want 1000 ms", got)
	}
	stop()
}

// TestGRPCStreamAdmittedOnItsMessage: a streaming call takes its place
// among the requests in progress (MaxRequests 1) once its request
// message arrives, not when it opens: while it sends nothing, a unary
// call is served; once its message has come, the place is its own and
// the unary call is refused.
func TestGRPCStreamAdmittedOnItsMessage(t *testing.T) {
	adm := NewAdmission(Limits{MaxRequests: 1}, nil)
	grpcSrv := grpc.NewServer(adm.GRPCOptions(time.Minute)...)
	healthpb.RegisterHealthServer(grpcSrv, health.NewServer())
	started, admitted := make(chan struct{}), make(chan struct{})
	grpcSrv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Hold", HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{StreamName: "Hold", ServerStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
			close(started)
			if err := s.RecvMsg(new(emptypb.Empty)); err != nil {
				return err
			}
			close(admitted)
			<-s.Context().Done()
			return nil
		}}},
	}, struct{}{})
	srv := New(Options{GRPC: grpcSrv, Net: http.NotFoundHandler(), Admission: adm, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute})
	cc, err := grpc.NewClient("passthrough:///"+serveFront(t, srv), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hold, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/test.Hold/Hold")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if n := adm.Use().Requests; n != 0 {
		t.Fatalf("a stream without its message holds %d places, want 0", n)
	}
	client := healthpb.NewHealthClient(cc)
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a call while a silent stream is open: %v", err)
	}
	// A server-streaming call's one message, then the end of its sending.
	if err := hold.SendMsg(&emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if err := hold.CloseSend(); err != nil {
		t.Fatal(err)
	}
	<-admitted
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call once the stream's message came: %v, want UNAVAILABLE", err)
	}
}
