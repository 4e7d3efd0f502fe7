package ledgerengine

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// A transfer and a credit decode from binary as they were sent, and a
// transfer sent so answers in binary, as a JSON one answers in JSON.
func TestBinaryWireRoundTrips(t *testing.T) {
	req := ledger.TransferRequest{ID: "t1", From: "a", To: "b", Amount: 42, Currency: "EUR", Memo: "m", Pending: true, Timeout: time.Minute}
	v, err := EncodeCommand(&WireCommand{Op: OpTransfer, Req: &req, Currencies: map[string]string{"b": "EUR"}})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	want := &cmdTransfer{req: req, currencies: map[string]string{"b": "EUR"}, binary: true}
	if !reflect.DeepEqual(cmd, want) {
		t.Fatalf("decoded %+v, want %+v", cmd, want)
	}

	leg := ledger.CreditLeg{TransferID: "t1", From: "a", To: "b", Amount: 42, Memo: "m", At: time.Unix(0, 1234567890).UTC()}
	if v, err = Encode(&cmdCredit{leg: leg}); err != nil {
		t.Fatal(err)
	}
	if cmd, err = Decode(v); err != nil || !reflect.DeepEqual(cmd, &cmdCredit{leg: leg}) {
		t.Fatalf("credit decoded %+v, %v; want %+v", cmd, err, leg)
	}

	at := time.Unix(1700000000, 5).UTC()
	tr := ledger.Transfer{ID: "t1", From: "a", To: "b", Amount: 42, Currency: "EUR", Memo: "m", State: ledger.StatePending, TwoPhase: true, Timeout: time.Minute, CreatedAt: at, UpdatedAt: at.Add(time.Second), CurrencyGiven: true}
	for _, c := range []struct {
		err  error
		want WireOutcome
	}{
		{nil, WireOutcome{Transfer: &tr, Replayed: true}},
		{ledger.Errorf(ledger.CodeInsufficientFunds, "short"), WireOutcome{Transfer: &tr, Replayed: true, Err: &ledger.Error{Code: ledger.CodeInsufficientFunds, Detail: "short"}}},
		{errors.New("disk"), WireOutcome{Transfer: &tr, Replayed: true, Fault: "disk"}},
	} {
		var got WireOutcome
		b := Outcome(&cmdTransfer{binary: true, transfer: tr, replayed: true, err: c.err})
		if err := DecodeOutcome(b, &got); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("outcome with %v decoded %+v, %v; want %+v", c.err, got, err, c.want)
		}
	}
	// A refused transfer's outcome carries the request's fields and no
	// times: they come back zero, not as 1970 nor as a far date.
	refused := ledger.Transfer{ID: "t2", From: "a", To: "b", Amount: 7}
	var got WireOutcome
	b := Outcome(&cmdTransfer{binary: true, transfer: refused, err: ledger.Errorf(ledger.CodeAccountNotFound, "x")})
	if err := DecodeOutcome(b, &got); err != nil || !reflect.DeepEqual(*got.Transfer, refused) || !got.Transfer.CreatedAt.IsZero() {
		t.Errorf("a refused transfer's outcome decoded %+v, %v; want %+v", got.Transfer, err, refused)
	}
	if b := Outcome(&cmdTransfer{transfer: tr}); b[0] != '{' {
		t.Errorf("a JSON transfer's outcome is %q, want JSON", b)
	}
}

// A binary value cut anywhere is an error, never a shorter command.
func TestBinaryWireRefusesTruncation(t *testing.T) {
	req := ledger.TransferRequest{ID: "t1", From: "a", To: "b", Amount: 42}
	v, _ := EncodeCommand(&WireCommand{Op: OpTransfer, Req: &req, Currencies: map[string]string{"b": "USD"}})
	out := encodeTransferOutcome(&ledger.Transfer{ID: "t1"}, false, ledger.Errorf(ledger.CodeAccountNotFound, "x"))
	for n := 1; n < len(v); n++ {
		if _, err := Decode(v[:n]); err == nil {
			t.Errorf("command: %d of %d bytes decoded", n, len(v))
		}
	}
	for n := 1; n < len(out); n++ {
		if err := DecodeOutcome(out[:n], &WireOutcome{}); err == nil {
			t.Errorf("outcome: %d of %d bytes decoded", n, len(out))
		}
	}
}
