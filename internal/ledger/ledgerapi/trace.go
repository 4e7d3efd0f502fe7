package ledgerapi

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/telemetry"
)

// Traced returns next with every call traced: one span per call, a child
// of the request's server span, so that a trace shows how much of a
// request the engine took (queueing, the shard's round and its fsync).
// Wrap it only when tracing is on: with tracing off the spans would cost
// without being seen.
func Traced(next Ledger) Ledger { return traced{next} }

type traced struct{ next Ledger }

// start starts the span of one ledger call.
func start(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return telemetry.StartSpan(ctx, "ledger."+op, attrs...)
}

func (l traced) CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	ctx, span := start(ctx, "CreateAccount", attribute.String("surge.account", spec.ID))
	a, created, err := l.next.CreateAccount(ctx, spec)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return a, created, err
}

func (l traced) Account(ctx context.Context, id string) (ledger.Account, error) {
	ctx, span := start(ctx, "Account", attribute.String("surge.account", id))
	a, err := l.next.Account(ctx, id)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return a, err
}

func (l traced) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	return l.TransferWith(ctx, req, nil)
}

func (l traced) TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error) {
	ctx, span := start(ctx, "Transfer", attribute.String("surge.transfer", req.ID))
	t, replayed, err := l.next.TransferWith(ctx, req, attached)
	span.SetAttributes(attribute.Bool("surge.replayed", replayed))
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return t, replayed, err
}

func (l traced) TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	ctx, span := start(ctx, "TransferBatch", attribute.Int("surge.batch.transfers", len(reqs)), attribute.Bool("surge.batch.atomic", atomic))
	res, err := l.next.TransferBatch(ctx, reqs, atomic)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return res, err
}

func (l traced) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	ctx, span := start(ctx, "PostPending", attribute.String("surge.transfer", id))
	t, err := l.next.PostPending(ctx, id, amount)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return t, err
}

func (l traced) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	ctx, span := start(ctx, "VoidPending", attribute.String("surge.transfer", id))
	t, err := l.next.VoidPending(ctx, id)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return t, err
}

func (l traced) GetTransfer(ctx context.Context, id string) (ledger.Transfer, error) {
	ctx, span := start(ctx, "GetTransfer", attribute.String("surge.transfer", id))
	t, err := l.next.GetTransfer(ctx, id)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return t, err
}

func (l traced) History(ctx context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	ctx, span := start(ctx, "History", attribute.String("surge.account", accountID))
	p, err := l.next.History(ctx, accountID, q)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return p, err
}

func (l traced) Stats(ctx context.Context) (ledger.Stats, error) {
	ctx, span := start(ctx, "Stats")
	s, err := l.next.Stats(ctx)
	telemetry.EndSpan(span, err, string(ledger.CodeOf(err)))
	return s, err
}
