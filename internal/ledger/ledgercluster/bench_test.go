//go:build unix

package ledgercluster

import (
	"context"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
)

// answering is a caller whose every call gets reply at once, as an owner
// would answer it: it checks the command is a ledger transfer.
type answering struct {
	tb    testing.TB
	reply []byte
}

func (a answering) CallWith(_ context.Context, _ int, cmd []byte, _ calls.Effect, decode func([]byte) error) error {
	if len(cmd) < 2 || cmd[0] != calls.WorkloadLedger || ledgerengine.Op(cmd[1]) != ledgerengine.OpTransfer {
		a.tb.Fatalf("command %q is no ledger transfer", cmd)
	}
	return decode(a.reply)
}

// A transfer as a cluster node's handler makes it, but for the call's
// wait (calls.BenchmarkCallLocal): the receiver's currency, the command's
// encoding and the outcome's decoding.
func BenchmarkTransfer(b *testing.B) {
	at := time.Unix(1700000000, 5).UTC()
	req := ledger.TransferRequest{ID: "4f1c2a9e-7b7d-4c55-9d0e-2f6a1b3c4d5e", From: "acct-0000173", To: "acct-0000402", Amount: 1250}
	out := &ledgerengine.Transfer{Transfer: ledger.Transfer{
		ID: req.ID, From: req.From, To: req.To, Amount: req.Amount, Currency: "EUR", PostedAmount: req.Amount,
		State: ledger.StatePosted, CreatedAt: at, UpdatedAt: at,
	}}
	l := &Ledger{k: answering{b, ledgerengine.EncodeOutcome(out)}, partitions: 6}
	l.currencies.Store(req.To, "EUR")
	b.ReportAllocs()
	cpu := measure.ProcessCPU()
	for b.Loop() {
		t, _, err := l.Transfer(context.Background(), req)
		if err != nil || t.ID != req.ID {
			b.Fatalf("got %+v, %v", t, err)
		}
	}
	b.ReportMetric(float64((measure.ProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
