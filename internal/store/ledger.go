package store

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/surge-dev/surge/internal/ledger"
)

// Ledger key layout. Every ledger key starts with 'l'; account ids cannot
// contain 0x00, which ends the account part of a history key so that one
// account's history never runs into another's.
//
//	la/<account>               account as opened (id, currency, limit, metadata)
//	lt/<transfer>              transfer
//	lh/<account>\x00<seq:8 BE> history chunk: the account's entries up to
//	                           seq, newest first, back to the previous chunk
//	                           (history.go)
//	lj/<shard:2 BE><n:8 BE>    journal: the history entries of a shard's
//	                           batch n not yet in chunks (history.go)
//	lo/<outbox id>             outbox: cross-shard credits sent by one batch
//	                           to one shard and not yet applied there
//	lp/<transfer>              an open two-phase hold (value empty)
var (
	prefixAccount  = []byte("la/")
	prefixTransfer = []byte("lt/")
	prefixHistory  = []byte("lh/")
	prefixJournal  = []byte("lj/")
	prefixOutbox   = []byte("lo/")
	prefixHold     = []byte("lp/")
)

const recordVersion = 1

func key(dst, prefix []byte, id string) []byte {
	return append(append(dst[:0], prefix...), id...)
}

func historyKey(dst []byte, account string, seq uint64) []byte {
	dst = key(dst, prefixHistory, account)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// upperBound returns the smallest key greater than every key with prefix p.
func upperBound(p []byte) []byte {
	u := append([]byte(nil), p...)
	u[len(u)-1]++
	return u
}

// LedgerBatch writes ledger records into one storage batch, reusing its
// scratch buffers across records.
type LedgerBatch struct {
	*pebble.Batch
	key []byte
	val encoder
}

// NewLedgerBatch wraps b.
func NewLedgerBatch(b *pebble.Batch) *LedgerBatch { return &LedgerBatch{Batch: b} }

func (w *LedgerBatch) set() {
	// Set copies key and value into the batch, so the buffers can be reused.
	_ = w.Set(w.key, w.val.b, nil)
}

// PutAccount writes what a was opened with (read back by EachAccount).
// Balance, pending sum and entry count are not stored here: transfers would rewrite the record every time,
// and they follow from the account's history and open holds.
func (w *LedgerBatch) PutAccount(a *ledger.Account) {
	w.key = key(w.key, prefixAccount, a.ID)
	w.val.b = encodeAccount(w.val.b[:0], a)
	w.set()
}

// PutTransfer writes t.
func (w *LedgerBatch) PutTransfer(t *ledger.Transfer) {
	w.key = key(w.key, prefixTransfer, t.ID)
	w.val.b = encodeTransfer(w.val.b[:0], t)
	w.set()
}

// PutOutbox records cross-shard credits that must still be applied, as one
// record: a batch sends all its credits for one shard together, so they are
// recorded and settled together too.
func (w *LedgerBatch) PutOutbox(id string, legs []ledger.CreditLeg) {
	w.key = key(w.key, prefixOutbox, id)
	w.val.b = encodeOutbox(w.val.b[:0], legs)
	w.set()
}

// DeleteOutbox removes an outbox record whose credits are applied.
func (w *LedgerBatch) DeleteOutbox(id string) {
	w.key = key(w.key, prefixOutbox, id)
	_ = w.Delete(w.key, nil)
}

// PutHold indexes an open two-phase transfer.
func (w *LedgerBatch) PutHold(transferID string) {
	w.key = key(w.key, prefixHold, transferID)
	_ = w.Set(w.key, nil, nil)
}

// DeleteHold removes a closed two-phase transfer from the index.
func (w *LedgerBatch) DeleteHold(transferID string) {
	w.key = key(w.key, prefixHold, transferID)
	_ = w.Delete(w.key, nil)
}

// Transfer reads the transfer id.
func (s *Store) Transfer(id string) (ledger.Transfer, bool, error) {
	v, ok, err := s.Get(key(nil, prefixTransfer, id))
	if !ok || err != nil {
		return ledger.Transfer{}, false, err
	}
	t, err := decodeTransfer(id, v)
	return t, err == nil, err
}

// EachAccount calls fn for every account.
func (s *Store) EachAccount(fn func(ledger.Account) error) error {
	return s.Scan(prefixAccount, upperBound(prefixAccount), false, func(_, v []byte) (bool, error) {
		a, err := decodeAccount(v)
		if err != nil {
			return false, err
		}
		return true, fn(a)
	})
}

// TransferIDs iterates over every stored transfer id; a scan error ends the
// iteration and is left in *err.
func (s *Store) TransferIDs(err *error) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		*err = s.Scan(prefixTransfer, upperBound(prefixTransfer), false, func(k, _ []byte) (bool, error) {
			return yield(string(k[len(prefixTransfer):])), nil
		})
	}
}

// EachHold calls fn for every open two-phase transfer.
func (s *Store) EachHold(fn func(ledger.Transfer) error) error {
	return s.Scan(prefixHold, upperBound(prefixHold), false, func(k, _ []byte) (bool, error) {
		t, ok, err := s.Transfer(string(k[len(prefixHold):]))
		if err != nil || !ok {
			return false, orCorrupt(err)
		}
		return true, fn(t)
	})
}

// EachOutbox calls fn for every outbox record, whose credits are not yet
// applied.
func (s *Store) EachOutbox(fn func(id string, legs []ledger.CreditLeg) error) error {
	return s.Scan(prefixOutbox, upperBound(prefixOutbox), false, func(k, v []byte) (bool, error) {
		legs, err := decodeOutbox(v)
		if err != nil {
			return false, err
		}
		return true, fn(string(k[len(prefixOutbox):]), legs)
	})
}

func orCorrupt(err error) error {
	if err == nil {
		return errCorrupt
	}
	return err
}

func encodeAccount(dst []byte, a *ledger.Account) []byte {
	e := encoder{dst}
	e.byte(recordVersion)
	e.string(a.ID)
	e.string(a.Currency)
	e.varint(a.OverdraftLimit)
	e.varint(a.CreatedAt.UnixNano())
	e.uvarint(uint64(len(a.Metadata)))
	for k, v := range a.Metadata {
		e.string(k)
		e.string(v)
	}
	return e.b
}

func decodeAccount(b []byte) (ledger.Account, error) {
	d := newDecoder(b)
	if d.Byte() != recordVersion {
		return ledger.Account{}, errCorrupt
	}
	a := ledger.Account{
		ID: d.Str(), Currency: d.Str(), OverdraftLimit: d.Varint(),
		CreatedAt: unixNano(d.Varint()),
	}
	if n := d.Uvarint(); n > 0 && n <= ledger.MaxMetadataKeys {
		a.Metadata = make(map[string]string, n)
		for range n {
			k := d.Str()
			a.Metadata[k] = d.Str()
		}
	} else if n > ledger.MaxMetadataKeys {
		d.Fail()
	}
	return a, d.Done()
}

// A transfer record (version 2) leaves out what its key or its other
// fields already say: the id is the key's, and the update time, the posted
// amount and the timeout are written only when they differ from the
// creation time, the amount and zero. Most transfers are posted once and
// never change; this halves their record. Version 1 records, with every
// field, still read.
const transferVersion = 2

// Transfer record flags, in the byte after the version; the low three bits
// are the state.
const (
	transferCurrencyGiven = 1 << (3 + iota)
	transferTwoPhase
	transferUpdated   // UpdatedAt is not CreatedAt
	transferPartly    // PostedAmount is not Amount
	transferStateMask = 1<<3 - 1
)

func encodeTransfer(dst []byte, t *ledger.Transfer) []byte {
	flags := byte(t.State) & transferStateMask
	if t.CurrencyGiven {
		flags |= transferCurrencyGiven
	}
	if t.TwoPhase || t.Timeout != 0 {
		flags |= transferTwoPhase
	}
	updated := !t.UpdatedAt.Equal(t.CreatedAt)
	if updated {
		flags |= transferUpdated
	}
	if t.PostedAmount != t.Amount {
		flags |= transferPartly
	}
	e := encoder{dst}
	e.byte(transferVersion)
	e.byte(flags)
	e.string(t.From)
	e.string(t.To)
	e.varint(t.Amount)
	e.string(t.Currency)
	e.string(t.Memo)
	e.varint(t.CreatedAt.UnixNano())
	if flags&transferTwoPhase != 0 {
		e.bool(t.TwoPhase)
		e.varint(int64(t.Timeout))
	}
	if updated {
		e.varint(t.UpdatedAt.UnixNano())
	}
	if flags&transferPartly != 0 {
		e.varint(t.PostedAmount)
	}
	return e.b
}

// decodeTransfer decodes the record of transfer id.
func decodeTransfer(id string, b []byte) (ledger.Transfer, error) {
	d := newDecoder(b)
	switch d.Byte() {
	case recordVersion:
		return decodeTransferV1(id, &d)
	case transferVersion:
	default:
		return ledger.Transfer{}, errCorrupt
	}
	flags := d.Byte()
	t := ledger.Transfer{
		ID: id, State: ledger.TransferState(flags & transferStateMask), CurrencyGiven: flags&transferCurrencyGiven != 0,
		From: d.Str(), To: d.Str(), Amount: d.Varint(), Currency: d.Str(), Memo: d.Str(),
		CreatedAt: unixNano(d.Varint()),
	}
	if flags&transferTwoPhase != 0 {
		t.TwoPhase, t.Timeout = d.Bool(), time.Duration(d.Varint())
	}
	t.UpdatedAt = t.CreatedAt
	if flags&transferUpdated != 0 {
		t.UpdatedAt = unixNano(d.Varint())
	}
	t.PostedAmount = t.Amount
	if flags&transferPartly != 0 {
		t.PostedAmount = d.Varint()
	}
	return t, d.Done()
}

// decodeTransferV1 reads the rest of a version 1 record, which repeats the
// id its key holds.
func decodeTransferV1(id string, d *decoder) (ledger.Transfer, error) {
	d.Bytes()
	t := ledger.Transfer{
		ID: id, From: d.Str(), To: d.Str(), Amount: d.Varint(),
		Currency: d.Str(), CurrencyGiven: d.Bool(), Memo: d.Str(),
		State: ledger.TransferState(d.Byte()), TwoPhase: d.Bool(), Timeout: time.Duration(d.Varint()),
		PostedAmount: d.Varint(), CreatedAt: unixNano(d.Varint()), UpdatedAt: unixNano(d.Varint()),
	}
	if t.State > transferStateMask {
		d.Fail()
	}
	return t, d.Done()
}

func encodeOutbox(dst []byte, legs []ledger.CreditLeg) []byte {
	e := encoder{dst}
	e.byte(recordVersion)
	e.uvarint(uint64(len(legs)))
	for i := range legs {
		c := &legs[i]
		e.string(c.TransferID)
		e.string(c.From)
		e.string(c.To)
		e.varint(c.Amount)
		e.string(c.Memo)
		e.varint(c.At.UnixNano())
	}
	return e.b
}

func decodeOutbox(b []byte) ([]ledger.CreditLeg, error) {
	d := newDecoder(b)
	if d.Byte() != recordVersion {
		return nil, errCorrupt
	}
	n := d.Uvarint()
	if n > uint64(len(b)) { // each leg takes several bytes
		return nil, errCorrupt
	}
	legs := make([]ledger.CreditLeg, 0, n)
	for range n {
		legs = append(legs, ledger.CreditLeg{
			TransferID: d.Str(), From: d.Str(), To: d.Str(), Amount: d.Varint(),
			Memo: d.Str(), At: unixNano(d.Varint()),
		})
	}
	return legs, d.Done()
}

func unixNano(n int64) time.Time { return time.Unix(0, n).UTC() }
