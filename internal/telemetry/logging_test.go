package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestLoggerAddsTraceIDs(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()

	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo, LogJSON).With("component", "test")
	log.InfoContext(ctx, "traced")
	log.Info("untraced")
	log.Debug("below the level")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(lines), buf.String())
	}
	var traced, untraced map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &traced); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &untraced); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if traced["trace_id"] != sc.TraceID().String() || traced["span_id"] != sc.SpanID().String() || traced["component"] != "test" {
		t.Errorf("traced record %v", traced)
	}
	if _, ok := untraced["trace_id"]; ok {
		t.Errorf("untraced record has a trace id: %v", untraced)
	}
}

func TestLogFormatFlag(t *testing.T) {
	var f LogFormat
	if err := f.Set("json"); err != nil || f.String() != "json" {
		t.Errorf("Set(json): %v, %s", err, f.String())
	}
	if err := f.Set("xml"); err == nil {
		t.Error("Set(xml) accepted")
	}
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo, LogText).Info("hello", "k", "v")
	if !strings.Contains(buf.String(), "msg=hello k=v") {
		t.Errorf("text record %q", buf.String())
	}
}
