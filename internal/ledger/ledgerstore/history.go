package ledgerstore

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// History is stored in two forms.
//
// A batch's entries are first written together as one journal record, a
// single key per shard batch, because each key in a batch costs a random
// insert into the memtable and later a rewrite in every compaction: with a
// key per entry, history would be two thirds of what a transfer writes.
// The entries stay in memory too, as their accounts' Recent entries.
//
// The engine later moves an account's Recent entries into one chunk record,
// keyed by the account and its newest seq, once enough have gathered or a
// sweep comes by; a journal record is trimmed once a whole sweep has passed
// since it was written, when every entry in it is in a chunk. Reads find
// entries in Recent or in chunks; a restart replays the journal.
//
// A chunk holds its entries oldest first, as the engine keeps an account's
// newest entries (ledger.EntryLog), so that storing them is a copy; a
// page read decodes only the entries it returns.
//
// A journal record also lists the two-phase transfers its batch opened,
// which make no entry until they are posted: with the entries' transfer
// ids, it names every transfer the batch created, so that a recovery can
// rebuild the transfer-id filter from a checkpoint and the journal after
// it (ledgerengine/checkpoint.go).

const (
	chunkVersion = 3
	// journalVersion records hold a count of entries, the ids of the holds
	// opened, and the Book's journal items as they are. Version 2 records
	// have no holds.
	journalVersion   = 3
	journalVersionV2 = 2
)

func journalKey(dst []byte, shard int, n uint64) []byte {
	dst = append(append(dst[:0], prefixJournal...), byte(shard>>8), byte(shard))
	return binary.BigEndian.AppendUint64(dst, n)
}

// PutChunk stores log, the entries of account up to seq newest, as one
// history record, and, unless NoTails, the account's tail (tails.go):
// newest and balance, the balance after it.
func (w *LedgerBatch) PutChunk(account string, newest uint64, balance int64, log ledger.EntryLog) {
	w.key = historyKey(w.key, account, newest)
	w.val.B = encodeChunk(w.val.B[:0], log.Len(), log.Bytes())
	w.set()
	if !w.NoTails {
		w.putTail(account, Tail{Seq: newest, Balance: balance})
	}
}

// PutJournal records the history entries of a shard's batch n (entries of
// them, in the Book's journal items: ledger.ReadJournal) and the ids of the
// holds it opened.
func (w *LedgerBatch) PutJournal(shard int, n uint64, entries int, items []byte, holds []string) {
	w.key = journalKey(w.key, shard, n)
	w.val.B = binary.AppendUvarint(append(w.val.B[:0], journalVersion), uint64(entries))
	w.val.B = binary.AppendUvarint(w.val.B, uint64(len(holds)))
	for _, id := range holds {
		w.val.String(id)
	}
	w.val.B = append(w.val.B, items...)
	w.set()
}

// TrimJournal deletes the shard's journal records before batch n, and
// records that it did (JournalState).
func (w *LedgerBatch) TrimJournal(shard int, n uint64) {
	_ = w.DeleteRange(journalKey(nil, shard, 0), journalKey(nil, shard, n), nil)
	_ = w.Set(trimKey(shard), binary.BigEndian.AppendUint64(nil, n), nil)
}

// ResetJournal deletes every journal record and starts a new journal
// epoch: the journal's record numbers start again from 0.
func (w *LedgerBatch) ResetJournal(epoch uint64) {
	_ = w.DeleteRange(prefixJournal, store.UpperBound(prefixJournal), nil)
	_ = w.DeleteRange(prefixJournalState, store.UpperBound(prefixJournalState), nil)
	_ = w.Set(epochKey, binary.BigEndian.AppendUint64(nil, epoch), nil)
}

// JournalState is what the journal's records do not say themselves: the
// epoch of their numbering and, by shard, the number below which TrimJournal
// deleted them.
type JournalState struct {
	Epoch   uint64
	Trimmed map[int]uint64
}

// JournalState reads the journal's epoch (0 if the journal was never reset)
// and trims.
func (s Store) JournalState() (JournalState, error) {
	st := JournalState{Trimmed: map[int]uint64{}}
	err := s.Scan(prefixJournalState, store.UpperBound(prefixJournalState), false, func(k, v []byte) (bool, error) {
		k = k[len(prefixJournalState):]
		switch {
		case len(v) != 8:
			return false, codec.ErrCorrupt
		case string(k) == "e":
			st.Epoch = binary.BigEndian.Uint64(v)
		case len(k) == 3 && k[0] == 't':
			st.Trimmed[int(binary.BigEndian.Uint16(k[1:]))] = binary.BigEndian.Uint64(v)
		default:
			return false, codec.ErrCorrupt
		}
		return true, nil
	})
	return st, err
}

var epochKey = append(append([]byte(nil), prefixJournalState...), 'e')

func trimKey(shard int) []byte {
	return append(append(append([]byte(nil), prefixJournalState...), 't'), byte(shard>>8), byte(shard))
}

// JournalRecord is a journal record read back.
type JournalRecord struct {
	// Shard and N name the record: the shard's batch N.
	Shard int
	N     uint64
	// Entries are the batch's history entries, in the order written.
	Entries []ledger.AccountEntry
	// Holds are the ids of the two-phase transfers the batch opened.
	Holds []string
}

// EachJournalRecord calls fn for every journal record, by shard and then
// in the order written. The record is valid only during the call.
func (s Store) EachJournalRecord(fn func(*JournalRecord) error) error {
	return s.eachJournalRecord(prefixJournal, store.UpperBound(prefixJournal), fn)
}

// EachShardJournalRecord calls fn for every journal record of shard, in
// the order written. The record is valid only during the call.
func (s Store) EachShardJournalRecord(shard int, fn func(*JournalRecord) error) error {
	return s.eachJournalRecord(journalKey(nil, shard, 0), journalKey(nil, shard+1, 0), fn)
}

func (s Store) eachJournalRecord(lower, upper []byte, fn func(*JournalRecord) error) error {
	var r JournalRecord
	return s.Scan(lower, upper, false, func(k, v []byte) (bool, error) {
		if len(k) != len(prefixJournal)+10 {
			return false, codec.ErrCorrupt
		}
		k = k[len(prefixJournal):]
		r.Shard, r.N = int(binary.BigEndian.Uint16(k)), binary.BigEndian.Uint64(k[2:])
		if err := decodeJournal(&r, v); err != nil {
			return false, err
		}
		return true, fn(&r)
	})
}

// History returns up to limit entries of account with seq < before, newest
// first, from its chunks.
func (s Store) History(account string, before uint64, limit int) (out []ledger.Entry, err error) {
	if before <= 1 || limit <= 0 {
		return nil, nil
	}
	it, err := s.NewIter(&pebble.IterOptions{
		LowerBound: historyKey(nil, account, 0),
		UpperBound: store.UpperBound(historyKey(nil, account, math.MaxUint64)),
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	out = make([]ledger.Entry, 0, min(limit, 64))
	// Chunks hold disjoint runs of seqs, so only the first chunk whose
	// newest entry is at or after before can hold entries below it; the
	// chunks wholly below before follow in reverse key order.
	seek := historyKey(nil, account, before)
	if it.SeekGE(seek) {
		if out, err = appendChunk(out, it, before, limit); err != nil {
			return nil, err
		}
	}
	for ok := it.SeekLT(seek); ok && len(out) < limit; ok = it.Prev() {
		if out, err = appendChunk(out, it, before, limit); err != nil {
			return nil, err
		}
	}
	return out, it.Error()
}

// Tails reads accounts' newest stored entries through one iterator, which
// costs a seek per account instead of an iterator and two seeks (History).
// Read accounts in ascending order: each seek then starts near the last.
type Tails struct {
	it       *pebble.Iterator
	key, end []byte
	out      []ledger.Entry
}

// Tails returns a reader of newest entries; the caller closes it.
func (s Store) Tails() (*Tails, error) {
	it, err := s.NewIter(&pebble.IterOptions{LowerBound: prefixHistory, UpperBound: store.UpperBound(prefixHistory)})
	if err != nil {
		return nil, err
	}
	return &Tails{it: it}, nil
}

// Newest returns account's newest stored history entry, found false if
// none is stored.
func (t *Tails) Newest(account string) (e ledger.Entry, found bool, err error) {
	t.key = historyKey(t.key, account, 0)
	prefix := t.key[:len(t.key)-8] // lh/<account>\x00
	t.end = append(append(t.end[:0], prefix[:len(prefix)-1]...), 1)
	if !t.it.SeekLT(t.end) {
		return e, false, t.it.Error()
	}
	if k := t.it.Key(); len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return e, false, nil
	}
	if t.out, err = appendChunk(t.out[:0], t.it, math.MaxUint64, 1); err != nil {
		return e, false, err
	}
	return t.out[0], true, nil
}

// Close releases the iterator.
func (t *Tails) Close() error { return t.it.Close() }

// appendChunk appends the entries of the chunk at it with seq < before,
// newest first, until out holds limit.
func appendChunk(out []ledger.Entry, it *pebble.Iterator, before uint64, limit int) ([]ledger.Entry, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	k := it.Key()
	return decodeChunk(out, v, binary.BigEndian.Uint64(k[len(k)-8:]), before, limit)
}

// encodeChunk appends a chunk of n entries, encoded oldest first.
func encodeChunk(dst []byte, n int, encoded []byte) []byte {
	dst = append(dst, chunkVersion)
	dst = binary.AppendUvarint(dst, uint64(n))
	return append(dst, encoded...)
}

// decodeChunk appends to out the entries with seq < before of a chunk
// whose newest seq is newest, newest first, until out holds limit.
func decodeChunk(out []ledger.Entry, b []byte, newest, before uint64, limit int) ([]ledger.Entry, error) {
	d := codec.Decoder{B: b}
	if d.Byte() != chunkVersion {
		return nil, codec.ErrCorrupt
	}
	n := d.Uvarint()
	if d.Err != nil || n == 0 || n > newest || n > uint64(len(d.B)) { // each entry takes several bytes
		return nil, codec.ErrCorrupt
	}
	out, ok := ledger.AppendNewest(out, d.B, int(n), newest-(n-1), before, limit)
	if !ok {
		return nil, codec.ErrCorrupt
	}
	return out, nil
}

// decodeJournal decodes a journal record's entries and holds into r,
// reusing its slices.
func decodeJournal(r *JournalRecord, b []byte) error {
	r.Entries, r.Holds = r.Entries[:0], r.Holds[:0]
	d := codec.Decoder{B: b}
	version := d.Byte()
	if version != journalVersion && version != journalVersionV2 {
		return codec.ErrCorrupt
	}
	// The count tells a record cut at an item's end from a whole one.
	n := d.Uvarint()
	if version == journalVersion {
		holds := d.Uvarint()
		if holds > uint64(len(d.B)) { // each id takes at least a byte
			return codec.ErrCorrupt
		}
		for range holds {
			r.Holds = append(r.Holds, d.Str())
		}
	}
	if d.Err != nil || !ledger.ReadJournal(d.B, func(ae *ledger.AccountEntry) { r.Entries = append(r.Entries, *ae) }) || uint64(len(r.Entries)) != n {
		return codec.ErrCorrupt
	}
	return nil
}
