package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names surge's spans in every tracer it asks for.
const instrumentation = "github.com/surge-dev/surge"

// TracingConfig configures OpenTelemetry tracing.
type TracingConfig struct {
	// Endpoint is an OTLP/HTTP collector URL such as
	// http://localhost:4318, to whose /v1/traces spans are posted (a URL
	// with a path of its own is used as it is). Empty turns tracing off,
	// the default: no span is made at all.
	Endpoint string
	// SampleRatio is the share of traces kept, 0 to 1, for traces that do
	// not arrive with a sampling decision from the client.
	SampleRatio float64
	// Version is surge's version, reported as service.version.
	Version string
}

// Tracing is the tracing surge runs with.
type Tracing struct {
	provider *sdktrace.TracerProvider // nil when off
}

// enabled lets hot paths skip building span data when tracing is off.
var enabled atomic.Bool

// StartTracing sets up tracing as cfg says and installs it as the global
// OpenTelemetry tracer provider and W3C trace-context propagator. Call
// Shutdown on the result to flush spans still buffered.
func StartTracing(ctx context.Context, cfg TracingConfig) (*Tracing, error) {
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, fmt.Errorf("trace sample ratio %v: want 0 to 1", cfg.SampleRatio)
	}
	if cfg.Endpoint == "" {
		return &Tracing{}, nil
	}
	endpoint, err := tracesURL(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("surge"), semconv.ServiceVersion(cfg.Version))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return &Tracing{provider: tp}, nil
}

// tracesURL is where spans go: the endpoint's /v1/traces, as OTLP
// collectors serve it, unless the endpoint names a path of its own.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("OTLP endpoint %q: want a URL such as http://localhost:4318", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Provider returns the tracer provider, or nil when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t.provider == nil {
		return nil
	}
	return t.provider
}

// Shutdown exports the spans still buffered and stops tracing.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	enabled.Store(false)
	return errors.Join(t.provider.ForceFlush(ctx), t.provider.Shutdown(ctx))
}

// TracingEnabled reports whether spans are exported. Code that would do
// work only to describe a span (collect links, format attributes) checks it
// first.
func TracingEnabled() bool { return enabled.Load() }

// Tracer returns surge's tracer from the global provider: a no-op tracer
// until StartTracing turned tracing on.
func Tracer() trace.Tracer { return otel.Tracer(instrumentation) }

// StartSpan starts an internal span named name as a child of ctx's span.
func StartSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// Link returns a link to ctx's span, and false if ctx has none. A shard
// batch serves many requests at once, so it cannot be the child of each:
// the engine takes each request's link when it queues the command and
// starts the batch's span with StartBatchSpan.
func Link(ctx context.Context) (trace.Link, bool) {
	sc := trace.SpanContextFromContext(ctx)
	return trace.Link{SpanContext: sc}, sc.IsValid()
}

// StartBatchSpan starts the span of one shard batch of commands, linked to
// the spans of the requests it serves. It is the child of the first
// sampled one of them, so that it is sampled (and shows in that request's
// trace) whenever one of its requests is; the rest are links. The storage
// commit is a StartSpan child of the returned context.
func StartBatchSpan(shard, commands int, links []trace.Link) (context.Context, trace.Span) {
	parent := context.Background()
	for i, l := range links {
		if l.SpanContext.IsSampled() {
			parent = trace.ContextWithRemoteSpanContext(parent, l.SpanContext)
			links = append(links[:i:i], links[i+1:]...)
			break
		}
	}
	return Tracer().Start(parent, "shard.batch",
		trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("surge.shard", shard), attribute.Int("surge.batch.commands", commands)))
}

// EndSpan ends span, marking it failed by err. Refusals the client caused
// (insufficient funds, a sold-out area), which carry a code, are outcomes,
// not faults, and are recorded as their code only.
func EndSpan(span trace.Span, err error, code string) {
	if err != nil {
		if code != "" {
			span.SetAttributes(attribute.String("surge.code", code))
		} else {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
