package ledgerengine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
)

// The commands and outcomes a cluster carries most travel in binary
// (internal/codec): a transfer, the credit it forwards and a transfer's
// outcome; JSON's encoding and decoding on both ends were a large part of
// a node's CPU per transfer (docs/BENCHMARKS.md, "Cluster mode on
// Kafka"). A transfer sent in JSON (a ticket payment's debit, a node of
// the earlier format) gets its outcome in JSON; every other command and
// outcome is JSON. A binary value begins with its kind, a byte a JSON
// value never begins with.
const (
	wireTransfer byte = 0x01
	wireCredit   byte = 0x02
	wireOutcome  byte = 0x03
)

// Outcome flags (wireOutcome's second byte).
const (
	outcomeReplayed byte = 1 << iota
	outcomeErr
	outcomeFault
)

// EncodeCommand encodes w for the owner of its shard (Decode).
func EncodeCommand(w *WireCommand) ([]byte, error) {
	if w.Op != OpTransfer || w.Req == nil {
		return json.Marshal(w)
	}
	r := w.Req
	e := codec.Encoder{B: make([]byte, 0, 64+len(r.ID)+len(r.From)+len(r.To)+len(r.Memo))}
	e.Byte(wireTransfer)
	e.String(r.ID)
	e.String(r.From)
	e.String(r.To)
	e.Varint(r.Amount)
	e.String(r.Currency)
	e.String(r.Memo)
	e.Bool(r.Pending)
	e.Varint(int64(r.Timeout))
	e.String(w.Currencies[r.To])
	return e.B, nil
}

// decodeBinary decodes a binary command (b[0] is its kind).
func decodeBinary(b []byte) (engine.Command, error) {
	d := codec.Decoder{B: b[1:]}
	var cmd engine.Command
	switch b[0] {
	case wireTransfer:
		req := ledger.TransferRequest{ID: d.Str(), From: d.Str(), To: d.Str(), Amount: d.Varint(), Currency: d.Str(), Memo: d.Str(), Pending: d.Bool(), Timeout: time.Duration(d.Varint())}
		c := &cmdTransfer{req: req, binary: true}
		if cur := d.Str(); cur != "" {
			c.currencies = map[string]string{req.To: cur}
		}
		cmd = c
	case wireCredit:
		cmd = &cmdCredit{leg: ledger.CreditLeg{TransferID: d.Str(), From: d.Str(), To: d.Str(), Amount: d.Varint(), Memo: d.Str(), At: d.Time()}}
	default:
		return nil, fmt.Errorf("ledgerengine: command of unknown kind %#x", b[0])
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("ledgerengine: decoding a command: %w", err)
	}
	return cmd, nil
}

func encodeCredit(leg *ledger.CreditLeg) []byte {
	e := codec.Encoder{B: make([]byte, 0, 48+len(leg.TransferID)+len(leg.From)+len(leg.To)+len(leg.Memo))}
	e.Byte(wireCredit)
	e.String(leg.TransferID)
	e.String(leg.From)
	e.String(leg.To)
	e.Varint(leg.Amount)
	e.String(leg.Memo)
	e.Time(leg.At)
	return e.B
}

// encodeTransferOutcome encodes a transfer command's outcome: the flags,
// the transfer's id and its record as the store keeps it
// (ledgerstore.EncodeTransfer), then the error if there is one.
func encodeTransferOutcome(t *ledger.Transfer, replayed bool, err error) []byte {
	var flags byte
	if replayed {
		flags |= outcomeReplayed
	}
	derr := domainErr(err)
	switch {
	case derr != nil:
		flags |= outcomeErr
	case err != nil:
		flags |= outcomeFault
	}
	e := codec.Encoder{B: make([]byte, 0, 64+len(t.ID)+len(t.From)+len(t.To)+len(t.Memo))}
	e.Byte(wireOutcome)
	e.Byte(flags)
	e.String(t.ID)
	ledgerstore.EncodeTransfer(&e, t)
	switch {
	case derr != nil:
		e.String(string(derr.Code))
		e.String(derr.Detail)
	case err != nil:
		e.String(err.Error())
	}
	return e.B
}

// DecodeOutcome decodes an outcome Outcome encoded, binary or JSON, into o.
func DecodeOutcome(b []byte, o *WireOutcome) error {
	if len(b) == 0 || b[0] != wireOutcome {
		return json.Unmarshal(b, o)
	}
	d := codec.Decoder{B: b[1:]}
	flags := d.Byte()
	id := d.Str()
	t := ledgerstore.DecodeTransfer(&d, id)
	*o = WireOutcome{Transfer: &t, Replayed: flags&outcomeReplayed != 0}
	switch {
	case flags&outcomeErr != 0:
		o.Err = &ledger.Error{Code: ledger.Code(d.Str()), Detail: d.Str()}
	case flags&outcomeFault != 0:
		o.Fault = d.Str()
	}
	if err := d.Done(); err != nil {
		return fmt.Errorf("ledgerengine: decoding an outcome: %w", err)
	}
	return nil
}
