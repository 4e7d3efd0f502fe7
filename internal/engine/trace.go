package engine

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/telemetry"
)

// batchTrace traces one shard batch when tracing is on: a root span
// linked to the spans of the requests the batch serves (it serves many at
// once, so it cannot be the child of each), with the storage commit as its
// child. With tracing off it is empty and costs one atomic load.
type batchTrace struct {
	ctx          context.Context
	span, commit trace.Span
}

func startBatchTrace(shard int, envs []Envelope) batchTrace {
	if !telemetry.TracingEnabled() {
		return batchTrace{}
	}
	var links []trace.Link
	for i := range envs {
		if envs[i].link.SpanContext.IsValid() {
			links = append(links, envs[i].link)
		}
	}
	ctx, span := telemetry.StartBatchSpan(shard, len(envs), links)
	return batchTrace{ctx: ctx, span: span}
}

func (t *batchTrace) startCommit() {
	if t.span != nil {
		_, t.commit = telemetry.StartSpan(t.ctx, "storage.commit")
	}
}

func (t *batchTrace) endCommit() {
	if t.commit != nil {
		t.commit.End()
	}
}

func (t *batchTrace) end() {
	if t.span != nil {
		t.span.End()
	}
}
