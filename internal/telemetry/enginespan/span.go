// Package enginespan traces the engine facades that the transports call:
// one span per call, a child of the request's server span, so that a trace
// shows how much of a request the engine took (queueing, the shard's batch
// and its fsync, a reservation's wait for its decision).
package enginespan

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/ledger"
)

// end ends span, marking it failed by err. Refusals the client caused
// (insufficient funds, a sold-out area) are outcomes, not faults, and are
// recorded as their code only.
func end(span trace.Span, err error) {
	if err != nil {
		if code := ledger.CodeOf(err); code != "" {
			span.SetAttributes(attribute.String("surge.code", string(code)))
		} else {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
