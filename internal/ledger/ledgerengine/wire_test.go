package ledgerengine

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
)

// wireCases are a command of every operation with its arguments and an
// outcome, as a shard fills it in.
func wireCases() []Command {
	at := time.Unix(1700000000, 5).UTC()
	req := ledger.TransferRequest{ID: "t1", From: "a", To: "b", Amount: 42, Currency: "EUR", Memo: "m", Pending: true, Timeout: time.Minute}
	tr := ledger.Transfer{ID: "t1", From: "a", To: "b", Amount: 42, Currency: "EUR", Memo: "m", State: ledger.StatePending, TwoPhase: true, Timeout: time.Minute, CreatedAt: at, UpdatedAt: at.Add(time.Second), CurrencyGiven: true, PostedAmount: 40}
	short := ledger.Errorf(ledger.CodeInsufficientFunds, "short")
	acct := ledger.Account{ID: "a", Currency: "EUR", OverdraftLimit: 5, Metadata: map[string]string{"k": "v", "j": "w"}, CreatedAt: at, Balance: -3, Pending: 2, Entries: 9}
	batch := AtomicBatch{
		ID: "b1", Attempt: 1, Reqs: []ledger.TransferRequest{req, {ID: "t2", From: "b", To: "c", Amount: 1}},
		Currencies: map[string]string{"b": "EUR", "c": "EUR"}, Chain: []int{2, 0}, Step: 1, ReplyTo: []byte("0:r1"), EvalOnly: true,
		Results: []WireResult{{Transfer: tr, Replayed: true}, {}}, Nows: []time.Time{at, {}}, Failed: 1, Err: short,
		Reserved: []int{0}, Skip: []int{1},
	}
	return []Command{
		&CreateAccount{Spec: ledger.AccountSpec{ID: "a", Currency: "EUR", OverdraftLimit: 5, Metadata: map[string]string{"k": "v"}}, Account: acct, Created: true},
		&Transfer{Req: req, Currency: "EUR", Transfer: tr, Replayed: true, Err: short},
		&Transfer{Req: req, Transfer: ledger.Transfer{ID: "t2", From: "a", To: "b", Amount: 7}, Err: errors.New("disk")},
		&Batch{Reqs: []ledger.TransferRequest{req, req}, Atomic: true, Currencies: map[string]string{"b": "EUR"},
			Results: []ledger.BatchResult{{Transfer: tr, Replayed: true}, {Transfer: tr, Err: short}}},
		&Post{ID: "t1", Amount: 40, Transfer: tr},
		&Void{ID: "t1", Transfer: tr, Err: short},
		&Credit{Leg: ledger.CreditLeg{TransferID: "t1", From: "a", To: "b", Amount: 42, Memo: "m", At: at}},
		&ReadAccount{ID: "a", Account: acct},
		&ReadAccount{ID: "z", Err: ledger.Errorf(ledger.CodeAccountNotFound, "account z not found")},
		&GetTransfer{ID: "t1", Transfer: tr},
		&History{ID: "a", Query: ledger.HistoryQuery{Limit: 10, Cursor: 7, Offset: 3}, Page: ledger.HistoryPage{
			Entries:    []ledger.Entry{{Seq: 6, TransferID: "t1", Direction: ledger.Debit, Amount: 42, BalanceAfter: -3, Counterpart: "b", Memo: "m", At: at}},
			NextCursor: 6,
		}},
		&Stats{Stats: ShardStats{Accounts: 3, Balances: map[string]int64{"EUR": -3, "USD": 4},
			Credits: ledger.CreditSums{Sent: map[string]int64{"EUR": 9}}}},
		&Atomic{Step: OpAtomicPrepare, Batch: batch, Results: batch.Results},
		&Atomic{Step: OpAtomicCommit, Batch: batch},
		&Atomic{Step: OpAtomicAbort, Batch: batch},
	}
}

// argsOnly is c with its outcome's fields empty: what a command decodes to.
func argsOnly(t *testing.T, c Command) Command {
	t.Helper()
	v, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	out := newCommand(c.Op())
	w := wire{&codec.Fields{D: &codec.Decoder{B: v[1:]}}}
	out.args(w)
	if err := w.D.Done(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every command decodes to its operation's type with the arguments sent,
// and its outcome to the outcome's fields.
func TestWireRoundTrips(t *testing.T) {
	for _, c := range wireCases() {
		v, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if Op(v[0]) != c.Op() {
			t.Fatalf("%T encodes as operation %d, want %d", c, v[0], c.Op())
		}
		got, err := Decode(v)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		if want := argsOnly(t, c); !reflect.DeepEqual(got, want) {
			t.Errorf("%T decoded\n%+v\nwant\n%+v", c, got, want)
		}
		full := argsOnly(t, c)
		if err := DecodeOutcome(full, EncodeOutcome(c)); err != nil {
			t.Fatalf("%T's outcome: %v", c, err)
		}
		if !reflect.DeepEqual(full, c) {
			t.Errorf("%T's outcome decoded\n%+v\nwant\n%+v", c, full, c)
		}
	}
}

// A refused transfer's outcome carries the request's fields and no times:
// they come back zero, not as 1970 nor as a far date.
func TestWireRefusedTransferHasNoTimes(t *testing.T) {
	refused := ledger.Transfer{ID: "t2", From: "a", To: "b", Amount: 7}
	got := &Transfer{}
	err := DecodeOutcome(got, EncodeOutcome(&Transfer{Transfer: refused, Err: ledger.Errorf(ledger.CodeAccountNotFound, "x")}))
	if err != nil || !reflect.DeepEqual(got.Transfer, refused) || !got.Transfer.CreatedAt.IsZero() || ledger.CodeOf(got.Err) != ledger.CodeAccountNotFound {
		t.Errorf("a refused transfer's outcome decoded %+v, %v; want %+v", got, err, refused)
	}
}

// A value cut anywhere, or followed by anything, is an error, never a
// shorter or another command or outcome.
func TestWireRefusesTruncatedAndTrailingBytes(t *testing.T) {
	for _, c := range wireCases() {
		v, _ := Encode(c)
		out := EncodeOutcome(c)
		for n := range len(v) {
			if _, err := Decode(v[:n]); err == nil {
				t.Errorf("%T: %d of %d bytes decoded", c, n, len(v))
			}
		}
		for n := range len(out) {
			if err := DecodeOutcome(newCommand(c.Op()), out[:n]); err == nil {
				t.Errorf("%T's outcome: %d of %d bytes decoded", c, n, len(out))
			}
		}
		if _, err := Decode(append(v, 0)); err == nil {
			t.Errorf("%T with a trailing byte decoded", c)
		}
		if err := DecodeOutcome(newCommand(c.Op()), append(out, 0)); err == nil {
			t.Errorf("%T's outcome with a trailing byte decoded", c)
		}
	}
}

// An unknown operation, an outcome of another operation and an atomic
// batch whose parts disagree are refused.
func TestWireRefusesUnknownAndMismatched(t *testing.T) {
	for _, op := range []byte{0, byte(OpAtomicAbort) + 1, 0xff} {
		if _, err := Decode([]byte{op}); err == nil {
			t.Errorf("operation %d decoded", op)
		}
	}
	if err := DecodeOutcome(&Void{}, EncodeOutcome(&Post{})); err == nil {
		t.Error("a post's outcome decoded as a void's")
	}
	bad := &Atomic{Step: OpAtomicPrepare, Batch: AtomicBatch{ID: "b", Reqs: make([]ledger.TransferRequest, 2), Results: make([]WireResult, 1), Chain: []int{0}, Nows: make([]time.Time, 1), Failed: -1}}
	if v, _ := Encode(bad); v == nil {
		t.Error("an atomic batch did not encode")
	} else if _, err := Decode(v); err == nil {
		t.Error("an atomic batch with fewer results than items decoded")
	}
}

// A ledger command in the JSON of the earlier format is malformed: the
// owner logs and drops it (docs/CLUSTER.md, "Commands on the wire").
func TestWireRefusesJSONCommands(t *testing.T) {
	req := ledger.TransferRequest{ID: "t1", From: "a", To: "b", Amount: 1}
	for _, old := range []any{
		map[string]any{"op": "transfer", "req": req, "currencies": map[string]string{"b": "USD"}},
		map[string]any{"op": "create_account", "spec": ledger.AccountSpec{ID: "a", Currency: "USD"}},
		map[string]any{"op": "stats"},
		map[string]any{"op": "atomic_prepare", "batch": map[string]any{"id": "b", "reqs": []ledger.TransferRequest{req}}},
	} {
		v, _ := json.Marshal(old)
		if _, err := Decode(v); err == nil {
			t.Errorf("JSON command %s decoded", v)
		}
	}
	if err := DecodeOutcome(&Transfer{}, []byte(`{"transfer":{"ID":"t1"}}`)); err == nil {
		t.Error("a JSON outcome decoded")
	}
}

// A transfer and a credit in the binary of the earlier format, the only
// commands it had in binary, still decode: those are the same bytes.
func TestWireDecodesEarlierBinaryTransfersAndCredits(t *testing.T) {
	e := codec.Encoder{}
	e.Byte(0x01)
	for _, s := range []string{"t1", "a", "b"} {
		e.String(s)
	}
	e.Varint(42)
	e.String("EUR")
	e.String("m")
	e.Bool(true)
	e.Varint(int64(time.Minute))
	e.String("USD")
	got, err := Decode(e.B)
	want := &Transfer{Req: ledger.TransferRequest{ID: "t1", From: "a", To: "b", Amount: 42, Currency: "EUR", Memo: "m", Pending: true, Timeout: time.Minute}, Currency: "USD"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("an earlier transfer decoded %+v, %v; want %+v", got, err, want)
	}
	at := time.Unix(0, 1234567890).UTC()
	e = codec.Encoder{}
	e.Byte(0x02)
	for _, s := range []string{"t1", "a", "b"} {
		e.String(s)
	}
	e.Varint(42)
	e.String("m")
	e.Time(at)
	got, err = Decode(e.B)
	if wantC := (&Credit{Leg: ledger.CreditLeg{TransferID: "t1", From: "a", To: "b", Amount: 42, Memo: "m", At: at}}); err != nil || !reflect.DeepEqual(got, wantC) {
		t.Errorf("an earlier credit decoded %+v, %v; want %+v", got, err, wantC)
	}
}

// A command appended after a cluster call's workload byte is that byte,
// then the command as Encode encodes it; encoding a transfer allocates
// its buffer and its fields only.
func TestAppendEncodeFollowsWhatIsThere(t *testing.T) {
	for _, c := range wireCases() {
		v, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendEncode([]byte{'l'}, c); string(got) != "l"+string(v) {
			t.Errorf("%T: appended %q, want %q", c, got, "l"+string(v))
		}
	}
	c := &Transfer{Req: ledger.TransferRequest{ID: "4f1c2a9e-7b7d-4c55-9d0e", From: "acct-0000173", To: "acct-0000402", Amount: 1250}}
	if n := testing.AllocsPerRun(100, func() { _, _ = Encode(c) }); n != 2 {
		t.Errorf("encoding a transfer allocates %v times, want 2", n)
	}
}

// A transfer's outcome decodes into its sender's command with the
// request's strings where the transfer repeats them, allocating only its
// fields, and with the reply's own where they differ (a replayed
// transfer of another request under the same id).
func TestTransferOutcomeKeepsTheRequestsStrings(t *testing.T) {
	req := ledger.TransferRequest{ID: "4f1c2a9e-7b7d-4c55-9d0e", From: "acct-0000173", To: "acct-0000402", Amount: 1250, Memo: "rent"}
	made := ledger.Transfer{ID: req.ID, From: req.From, To: req.To, Amount: 1250, PostedAmount: 1250, Currency: "EUR", Memo: "rent", State: ledger.StatePosted}
	other := ledger.Transfer{ID: req.ID, From: "acct-9", To: "acct-8", Amount: 5, PostedAmount: 5, Currency: "USD", Memo: "m", State: ledger.StatePosted}
	for _, want := range []ledger.Transfer{made, other} {
		out := EncodeOutcome(&Transfer{Transfer: want, Replayed: true})
		c := &Transfer{Req: req, Currency: "EUR"}
		if err := DecodeOutcome(c, out); err != nil || !reflect.DeepEqual(c.Transfer, want) || !c.Replayed {
			t.Fatalf("decoded %+v (replayed %v), %v; want %+v", c.Transfer, c.Replayed, err, want)
		}
	}
	out, c := EncodeOutcome(&Transfer{Transfer: made}), &Transfer{Req: req, Currency: "EUR"}
	if n := testing.AllocsPerRun(100, func() { _ = DecodeOutcome(c, out) }); n != 1 {
		t.Errorf("decoding the outcome of the transfer requested allocates %v times, want 1", n)
	}
}
