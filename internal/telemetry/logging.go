package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogFormat is how log records are written: "text" (logfmt-like key=value
// pairs) or "json" (one object per line, for log shippers).
type LogFormat string

// The log formats NewLogger writes.
const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// Set parses a --log-format value; it makes LogFormat a pflag.Value.
func (f *LogFormat) Set(s string) error {
	switch LogFormat(s) {
	case LogText, LogJSON:
		*f = LogFormat(s)
		return nil
	}
	return fmt.Errorf("log format %q: want text or json", s)
}

// String returns the format's name.
func (f *LogFormat) String() string { return string(*f) }

// Type names the flag's value type in --help.
func (f *LogFormat) Type() string { return "format" }

// NewLogger returns a logger writing records at level and above to w in
// format. Records logged with a context inside a sampled trace carry its
// trace_id and span_id, so a log line leads to its trace and back.
func NewLogger(w io.Writer, level slog.Leveler, format LogFormat) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == LogJSON {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(traceHandler{h})
}

// traceHandler adds the trace and span ids of the record's context.
type traceHandler struct{ slog.Handler }

// Handle adds trace_id and span_id when ctx carries a valid span.
func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the trace ids on loggers made with Logger.With.
func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the trace ids on loggers made with Logger.WithGroup.
func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
