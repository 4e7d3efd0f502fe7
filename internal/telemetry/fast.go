package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/front"
)

// requestIDKey holds a fasthttp request's id as a user value: the client's
// valid X-Request-Id, or one minted on first use.
type requestIDKey struct{}

// FastRequestID returns the id of ctx's request, minting one if the client
// sent none, as RequestID does for net/http. Transport code logs it with
// every record about the request.
func FastRequestID(ctx *fasthttp.RequestCtx) string {
	if id, ok := ctx.UserValue(requestIDKey{}).(string); ok {
		return id
	}
	id := mintRequestID()
	ctx.SetUserValue(requestIDKey{}, id)
	return id
}

// HandOver gives a RequestCtx that front.NetHandler built the id of the
// net/http request it came from; the Middleware measured that request.
func HandOver(ctx *fasthttp.RequestCtx, w http.ResponseWriter, _ *http.Request) {
	if id := RequestID(w); id != "" {
		ctx.SetUserValue(requestIDKey{}, id)
	}
}

// Fast wraps a native fasthttp route, named by pattern ("POST
// /v1/transfers"), in what ServeHTTP does for net/http: the request id,
// the workload's meter and series, a span when tracing, a debug log line.
// The route's workload is fixed, so nothing is classified per request.
func (m *Middleware) Fast(pattern string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	workload := -1
	if _, path, ok := cutMethod(pattern); ok {
		workload = m.class.classifyPath(path)
	}
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		if v := ctx.Request.Header.Peek(RequestIDHeader); len(v) > 0 {
			if id := string(v); validRequestID(id) {
				ctx.SetUserValue(requestIDKey{}, id)
				ctx.Response.Header.Set(RequestIDHeader, id)
			}
		}
		var span trace.Span
		if m.traced {
			span = m.startSpan(ctx, pattern)
		}
		h(ctx)
		status := ctx.Response.StatusCode()
		if status >= 500 && len(ctx.Response.Header.Peek(RequestIDHeader)) == 0 {
			ctx.Response.Header.Set(RequestIDHeader, FastRequestID(ctx))
		}
		d := time.Since(start)
		m.record(workload, status, d)
		if span != nil {
			endSpan(span, ctx, status)
		}
		if m.log.Enabled(ctx, slog.LevelDebug) {
			m.log.LogAttrs(ctx, slog.LevelDebug, "request",
				slog.String("request_id", FastRequestID(ctx)), slog.String("method", string(ctx.Method())),
				slog.String("path", string(ctx.Path())), slog.Int("status", status), slog.Duration("duration", d),
				slog.String("remote", ctx.RemoteAddr().String()))
		}
	}
}

// cutMethod splits "METHOD /path" into its parts.
func cutMethod(pattern string) (method, path string, ok bool) {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == ' ' {
			return pattern[:i], pattern[i+1:], true
		}
	}
	return "", pattern, false
}

var fastPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// startSpan starts ctx's server span, continuing the client's traceparent,
// and makes it the context the route's handler passes on.
func (m *Middleware) startSpan(ctx *fasthttp.RequestCtx, name string) trace.Span {
	parent := fastPropagator.Extract(context.Background(), headerCarrier{&ctx.Request.Header})
	spanCtx, span := m.tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", string(ctx.Method())),
			attribute.String("url.path", string(ctx.Path()))))
	front.SetContext(ctx, spanCtx)
	return span
}

func endSpan(span trace.Span, ctx *fasthttp.RequestCtx, status int) {
	span.SetAttributes(attribute.Int("http.response.status_code", status),
		attribute.String("surge.request_id", FastRequestID(ctx)))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// headerCarrier reads W3C trace context from fasthttp request headers.
type headerCarrier struct{ h *fasthttp.RequestHeader }

func (c headerCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c headerCarrier) Set(key, value string) { c.h.Set(key, value) }
func (c headerCarrier) Keys() []string {
	var keys []string
	for k := range c.h.All() {
		keys = append(keys, string(k))
	}
	return keys
}
