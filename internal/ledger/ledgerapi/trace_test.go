package ledgerapi

import (
	"context"
	"testing"

	otelcodes "go.opentelemetry.io/otel/codes"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry/otlptest"
	"github.com/surge-dev/surge/internal/workloads"
)

func TestSpansAroundEngineCalls(t *testing.T) {
	rec, tp := otlptest.RecordSpans(t)
	eng, err := workloads.Open(context.Background(), workloads.Config{Engine: engine.Config{Dir: t.TempDir(), Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	l := Traced(eng.Ledger)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "POST /v1/transfers")
	if _, _, err := l.CreateAccount(ctx, ledger.AccountSpec{ID: "alice", Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Transfer(ctx, ledger.TransferRequest{ID: "t1", From: "@world", To: "alice", Amount: 5}); err != nil {
		t.Fatal(err)
	}
	_, _, refused := l.Transfer(ctx, ledger.TransferRequest{ID: "t2", From: "alice", To: "@world", Amount: 50})
	if ledger.CodeOf(refused) != ledger.CodeInsufficientFunds {
		t.Fatalf("overdraft: %v", refused)
	}
	parent.End()

	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	for i, want := range []string{"ledger.CreateAccount", "ledger.Transfer", "ledger.Transfer"} {
		s := spans[i]
		if s.Name() != want || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: %q, parent %v; want %q under the request's span", i, s.Name(), s.Parent().SpanID(), want)
		}
	}
	// A refusal is the client's outcome, not a fault of the server.
	if refusedSpan := spans[2]; refusedSpan.Status().Code == otelcodes.Error || !otlptest.HasAttr(refusedSpan, "surge.code", string(ledger.CodeInsufficientFunds)) {
		t.Errorf("refused transfer span: status %v, attrs %v", refusedSpan.Status(), refusedSpan.Attributes())
	}
}
