package ledgerstore

import (
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

const (
	chunkVersion = 3
	// journalVersion records hold a count of entries and the Book's
	// journal items as they are.
	journalVersion = 2
)

func journalKey(dst []byte, shard int, n uint64) []byte {
	dst = append(append(dst[:0], prefixJournal...), byte(shard>>8), byte(shard))
	return binary.BigEndian.AppendUint64(dst, n)
}

// PutChunk stores log, the entries of account up to seq newest, as one
// history record.
func (w *LedgerBatch) PutChunk(account string, newest uint64, log ledger.EntryLog) {
	w.key = historyKey(w.key, account, newest)
	w.val.B = encodeChunk(w.val.B[:0], log.Len(), log.Bytes())
	w.set()
}

// PutJournal records the history entries of a shard's batch n: entries of
// them, in the Book's journal items (ledger.ReadJournal).
func (w *LedgerBatch) PutJournal(shard int, n uint64, entries int, items []byte) {
	w.key = journalKey(w.key, shard, n)
	w.val.B = binary.AppendUvarint(append(w.val.B[:0], journalVersion), uint64(entries))
	w.val.B = append(w.val.B, items...)
	w.set()
}

// TrimJournal deletes the shard's journal records before batch n.
func (w *LedgerBatch) TrimJournal(shard int, n uint64) {
	_ = w.DeleteRange(journalKey(nil, shard, 0), journalKey(nil, shard, n), nil)
}

// ClearJournal deletes every journal record.
func (w *LedgerBatch) ClearJournal() {
	_ = w.DeleteRange(prefixJournal, store.UpperBound(prefixJournal), nil)
}

// EachJournalEntry calls fn for every journaled entry, each shard's in the
// order they were written. The entry is valid only during the call.
func (s Store) EachJournalEntry(fn func(*ledger.AccountEntry) error) error {
	var entries []ledger.AccountEntry
	return s.Scan(prefixJournal, store.UpperBound(prefixJournal), false, func(_, v []byte) (bool, error) {
		var err error
		if entries, err = decodeJournal(entries[:0], v); err != nil {
			return false, err
		}
		for i := range entries {
			if err := fn(&entries[i]); err != nil {
				return false, err
			}
		}
		return true, nil
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

// decodeJournal appends a journal record's entries to dst.
func decodeJournal(dst []ledger.AccountEntry, b []byte) ([]ledger.AccountEntry, error) {
	d := codec.Decoder{B: b}
	if d.Byte() != journalVersion {
		return nil, codec.ErrCorrupt
	}
	// The count tells a record cut at an item's end from a whole one.
	n, start := d.Uvarint(), len(dst)
	if d.Err != nil || !ledger.ReadJournal(d.B, func(ae *ledger.AccountEntry) { dst = append(dst, *ae) }) || uint64(len(dst)-start) != n {
		return nil, codec.ErrCorrupt
	}
	return dst, nil
}
