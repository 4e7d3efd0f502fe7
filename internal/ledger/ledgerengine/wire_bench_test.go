//go:build unix

package ledgerengine

import (
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// benchTransfer is a transfer command as a cluster node's clients send
// it, with the outcome its owner answers.
func benchTransfer() *Transfer {
	at := time.Unix(1700000000, 5).UTC()
	req := ledger.TransferRequest{ID: "4f1c2a9e-7b7d-4c55-9d0e-2f6a1b3c4d5e", From: "acct-0000173", To: "acct-0000402", Amount: 1250, Currency: "EUR"}
	return &Transfer{Req: req, Currency: "EUR", Transfer: ledger.Transfer{
		ID: req.ID, From: req.From, To: req.To, Amount: req.Amount, Currency: "EUR", PostedAmount: req.Amount,
		State: ledger.StatePosted, CreatedAt: at, UpdatedAt: at,
	}}
}

// The four encodings of a transfer on its way through a cluster: the
// sender's command, the owner's decoding of it, the owner's outcome and
// the sender's decoding of that.
func BenchmarkWireTransfer(b *testing.B) {
	c := benchTransfer()
	cmd, err := Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	out := EncodeOutcome(c)
	got := &Transfer{Req: c.Req, Currency: c.Currency} // the sender's command
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"Encode", func() error { _, err := Encode(c); return err }},
		{"Decode", func() error { _, err := Decode(cmd); return err }},
		{"EncodeOutcome", func() error { EncodeOutcome(c); return nil }},
		{"DecodeOutcome", func() error { return DecodeOutcome(got, out) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, processCPU(b))
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per operation since before.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64((processCPU(b)-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
