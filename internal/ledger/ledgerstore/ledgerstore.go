package ledgerstore

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// Ledger key layout. Every ledger key starts with 'l'; account ids cannot
// contain 0x00, which ends the account part of a history key so that one
// account's history never runs into another's.
//
//	la/<account>               account as opened (id, currency, limit, metadata)
//	lt/<transfer>              transfer
//	lh/<account>\x00<seq:8 BE> history chunk: the account's entries up to
//	                           seq, oldest first, from the previous chunk
//	                           (history.go)
//	lj/<shard:2 BE><n:8 BE>    journal: the history entries of a shard's
//	                           batch n not yet in chunks (history.go)
//	lp/<transfer>              an open two-phase hold (value empty)
//	lc/<account>               the account's newest chunk's seq and balance
//	                           after it (tails.go)
//	lv/tails                   every chunk has its lc/ record (tails.go)
//	lk/e                       the journal's epoch (history.go)
//	lk/t<shard:2 BE>           the shard's journal is trimmed below this
//	                           record (history.go)
var (
	prefixAccount      = []byte("la/")
	prefixTransfer     = []byte("lt/")
	prefixHistory      = []byte("lh/")
	prefixJournal      = []byte("lj/")
	prefixHold         = []byte("lp/")
	prefixJournalState = []byte("lk/")
)

func historyKey(dst []byte, account string, seq uint64) []byte {
	dst = store.Key(dst, prefixHistory, account)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// LedgerBatch writes ledger records into one storage batch, reusing its
// scratch buffers across records.
type LedgerBatch struct {
	*pebble.Batch
	// NoTails leaves out the tail record PutChunk writes beside each
	// chunk (tails.go), for a store that never reads them: a cluster
	// owner's cache, which loads its accounts from their chunks since it
	// is rebuilt from changelogs. Each would cost a key in the cache, in
	// the node's local copy and in the changelog.
	NoTails bool
	key     []byte
	val     codec.Encoder
}

// NewLedgerBatch wraps b.
func NewLedgerBatch(b *pebble.Batch) *LedgerBatch { return &LedgerBatch{Batch: b} }

func (w *LedgerBatch) set() {
	// Set copies key and value into the batch, so the buffers can be reused.
	_ = w.Set(w.key, w.val.B, nil)
}

// PutAccount writes what a was opened with (read back by EachAccount).
// Balance, pending sum and entry count are not stored here: transfers would rewrite the record every time,
// and they follow from the account's history and open holds.
func (w *LedgerBatch) PutAccount(a *ledger.Account) {
	w.key = store.Key(w.key, prefixAccount, a.ID)
	w.val.B = encodeAccount(w.val.B[:0], a)
	w.set()
}

// PutTransfer writes t.
func (w *LedgerBatch) PutTransfer(t *ledger.Transfer) {
	w.key = store.Key(w.key, prefixTransfer, t.ID)
	w.val.B = encodeTransfer(w.val.B[:0], t)
	w.set()
}

// PutHold indexes an open two-phase transfer.
func (w *LedgerBatch) PutHold(transferID string) {
	w.key = store.Key(w.key, prefixHold, transferID)
	_ = w.Set(w.key, nil, nil)
}

// DeleteHold removes a closed two-phase transfer from the index.
func (w *LedgerBatch) DeleteHold(transferID string) {
	w.key = store.Key(w.key, prefixHold, transferID)
	_ = w.Delete(w.key, nil)
}

// Transfer reads the transfer id.
func (s Store) Transfer(id string) (ledger.Transfer, bool, error) {
	v, ok, err := s.Get(store.Key(nil, prefixTransfer, id))
	if !ok || err != nil {
		return ledger.Transfer{}, false, err
	}
	t, err := decodeTransfer(id, v)
	return t, err == nil, err
}

// EachAccount calls fn for every account.
func (s Store) EachAccount(fn func(ledger.Account) error) error {
	return s.Scan(prefixAccount, store.UpperBound(prefixAccount), false, func(_, v []byte) (bool, error) {
		a, err := decodeAccount(v)
		if err != nil {
			return false, err
		}
		return true, fn(a)
	})
}

// TransferIDs iterates over every stored transfer id; a scan error ends the
// iteration and is left in *err.
func (s Store) TransferIDs(err *error) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		*err = s.Scan(prefixTransfer, store.UpperBound(prefixTransfer), false, func(k, _ []byte) (bool, error) {
			return yield(string(k[len(prefixTransfer):])), nil
		})
	}
}

// EachHold calls fn for every open two-phase transfer.
func (s Store) EachHold(fn func(ledger.Transfer) error) error {
	return s.Scan(prefixHold, store.UpperBound(prefixHold), false, func(k, _ []byte) (bool, error) {
		t, ok, err := s.Transfer(string(k[len(prefixHold):]))
		if err != nil || !ok {
			return false, orCorrupt(err)
		}
		return true, fn(t)
	})
}

func orCorrupt(err error) error {
	if err == nil {
		return codec.ErrCorrupt
	}
	return err
}

func encodeAccount(dst []byte, a *ledger.Account) []byte {
	e := codec.Encoder{B: dst}
	e.Byte(store.RecordVersion)
	e.String(a.ID)
	e.String(a.Currency)
	e.Varint(a.OverdraftLimit)
	e.Varint(a.CreatedAt.UnixNano())
	e.Uvarint(uint64(len(a.Metadata)))
	for k, v := range a.Metadata {
		e.String(k)
		e.String(v)
	}
	return e.B
}

func decodeAccount(b []byte) (ledger.Account, error) {
	d := codec.Decoder{B: b}
	if d.Byte() != store.RecordVersion {
		return ledger.Account{}, codec.ErrCorrupt
	}
	a := ledger.Account{
		ID: d.Str(), Currency: d.Str(), OverdraftLimit: d.Varint(),
		CreatedAt: store.UnixNano(d.Varint()),
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
// never change; this halves their record.
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
	e := codec.Encoder{B: dst}
	EncodeTransfer(&e, t)
	return e.B
}

// decodeTransfer decodes the record of transfer id.
func decodeTransfer(id string, b []byte) (ledger.Transfer, error) {
	d := codec.Decoder{B: b}
	t := DecodeTransfer(&d, id, nil)
	return t, d.Done()
}

// EncodeTransfer appends t's record, all but its id, to e: the store's
// value of a transfer, and the transfer in a cluster's transfer outcome
// (ledgerengine). The times are codec times, so that the zero time an
// outcome of a refused transfer carries comes back as the zero time.
func EncodeTransfer(e *codec.Encoder, t *ledger.Transfer) {
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
	e.Byte(transferVersion)
	e.Byte(flags)
	e.String(t.From)
	e.String(t.To)
	e.Varint(t.Amount)
	e.String(t.Currency)
	e.String(t.Memo)
	e.Time(t.CreatedAt)
	if flags&transferTwoPhase != 0 {
		e.Bool(t.TwoPhase)
		e.Varint(int64(t.Timeout))
	}
	if updated {
		e.Time(t.UpdatedAt)
	}
	if flags&transferPartly != 0 {
		e.Varint(t.PostedAmount)
	}
}

// DecodeTransfer reads the record EncodeTransfer wrote of transfer id from
// d; a malformed one fails d. Its accounts, currency and memo, where they
// equal like's (if like is not nil), are like's strings, not copies
// (codec.Decoder.StrAs).
func DecodeTransfer(d *codec.Decoder, id string, like *ledger.Transfer) ledger.Transfer {
	if like == nil {
		like = &ledger.Transfer{}
	}
	if d.Byte() != transferVersion {
		d.Fail()
		return ledger.Transfer{}
	}
	flags := d.Byte()
	t := ledger.Transfer{
		ID: id, State: ledger.TransferState(flags & transferStateMask), CurrencyGiven: flags&transferCurrencyGiven != 0,
		From: d.StrAs(like.From), To: d.StrAs(like.To), Amount: d.Varint(), Currency: d.StrAs(like.Currency), Memo: d.StrAs(like.Memo),
		CreatedAt: d.Time(),
	}
	if flags&transferTwoPhase != 0 {
		t.TwoPhase, t.Timeout = d.Bool(), time.Duration(d.Varint())
	}
	t.UpdatedAt = t.CreatedAt
	if flags&transferUpdated != 0 {
		t.UpdatedAt = d.Time()
	}
	t.PostedAmount = t.Amount
	if flags&transferPartly != 0 {
		t.PostedAmount = d.Varint()
	}
	return t
}
