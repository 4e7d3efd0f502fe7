package telemetry

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// GRPC returns the grpc-go server options that do for the calls of a
// grpc-go server what ServeHTTP does for net/http requests: the workload's
// meter and series for unary calls (streams are not requests), a server
// span when tracing, continuing the client's traceparent, and a debug log
// line.
func (m *Middleware) GRPC() []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(m.unary)}
	if m.traced {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(m.provider),
			otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))))
	}
	return opts
}

func (m *Middleware) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	start := time.Now()
	res, err := next(ctx, req)
	d := time.Since(start)
	code := status.Code(err)
	m.record(m.class.classifyPath(info.FullMethod), httpStatusOf(code), d)
	if m.log.Enabled(ctx, slog.LevelDebug) {
		remote := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			remote = p.Addr.String()
		}
		m.log.LogAttrs(ctx, slog.LevelDebug, "call",
			slog.String("method", info.FullMethod), slog.String("code", code.String()),
			slog.Duration("duration", d), slog.String("remote", remote))
	}
	return res, err
}

// httpStatusOf is the HTTP status a gRPC code maps to (connect-go's
// mapping, which the Connect protocol sends): the workload series count a
// call as failed when the server is at fault, as they do a 5xx.
func httpStatusOf(code codes.Code) int {
	switch code {
	case codes.OK:
		return 200
	case codes.Unknown, codes.Internal, codes.DataLoss:
		return 500
	case codes.Unimplemented:
		return 501
	case codes.Unavailable:
		return 503
	case codes.DeadlineExceeded:
		return 504
	default:
		return 400 // the caller's fault: refused, not failed
	}
}
