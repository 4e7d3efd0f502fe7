package ledger

import (
	"encoding/binary"
	"time"

	"github.com/surge-dev/surge/internal/codec"
)

// History entries are kept encoded from the moment the Book makes them.
// As structs, an account's newest entries were three strings and a time
// each: 104 bytes the garbage collector had to scan, encoded once more into
// the journal and again into a chunk. Encoded, they hold no pointers, take
// about 40 bytes, and go to storage as they are, both in the shard's journal
// and in the account's chunk (store/history.go reads the same format).

// AppendEntry appends the encoding of e, without its Seq, to dst: the
// transfer id, direction, amount, balance after, counterpart, memo and
// time, in that order, strings length-prefixed and numbers as varints.
func AppendEntry(dst []byte, e *Entry) []byte {
	dst = codec.AppendString(dst, e.TransferID)
	dst = append(dst, byte(e.Direction))
	dst = binary.AppendVarint(dst, e.Amount)
	dst = binary.AppendVarint(dst, e.BalanceAfter)
	dst = codec.AppendString(dst, e.Counterpart)
	dst = codec.AppendString(dst, e.Memo)
	return binary.AppendVarint(dst, e.At.UnixNano())
}

// ReadEntry decodes an entry AppendEntry wrote at the start of b and returns
// it, without its Seq, with the bytes after it; ok is false if b does not
// start with a whole entry.
func ReadEntry(b []byte) (e Entry, rest []byte, ok bool) {
	r := codec.Decoder{B: b}
	e.TransferID = r.Str()
	e.Direction = Direction(r.Byte())
	e.Amount = r.Varint()
	e.BalanceAfter = r.Varint()
	e.Counterpart = r.Str()
	e.Memo = r.Str()
	e.At = time.Unix(0, r.Varint()).UTC()
	return e, r.B, r.Err == nil
}

// skipEntry returns b after the entry it starts with, without decoding its
// strings; ok is false if b does not start with a whole entry.
func skipEntry(b []byte) (rest []byte, ok bool) {
	r := codec.Decoder{B: b}
	r.Bytes()
	r.Byte()
	r.Varint()
	r.Varint()
	r.Bytes()
	r.Bytes()
	r.Varint()
	return r.B, r.Err == nil
}

// A shard's journal record holds the history entries of one batch as
// items. A transfer between two accounts of the shard is one item holding
// both its entries, which share the transfer's id, amount, memo and time:
// written as two, the repeated fields were a large part of what a
// transfer wrote to storage. Any other entry is an item of its own.
const (
	journalEntry = 1 // account, seq, then the entry as AppendEntry writes it
	journalPair  = 2 // transfer id, amount, memo, time, then account, seq and balance after of the debit and of the credit
)

// AppendJournalItem appends an item of one entry of account to dst.
func AppendJournalItem(dst []byte, account string, e *Entry) []byte {
	dst = append(dst, journalEntry)
	dst = codec.AppendString(dst, account)
	dst = binary.AppendUvarint(dst, e.Seq)
	return AppendEntry(dst, e)
}

// appendJournalPair appends the item of a transfer's debit of from and
// credit of to.
func appendJournalPair(dst []byte, from, to string, debit, credit *Entry) []byte {
	dst = append(dst, journalPair)
	dst = codec.AppendString(dst, debit.TransferID)
	dst = binary.AppendVarint(dst, debit.Amount)
	dst = codec.AppendString(dst, debit.Memo)
	dst = binary.AppendVarint(dst, debit.At.UnixNano())
	dst = codec.AppendString(dst, from)
	dst = binary.AppendUvarint(dst, debit.Seq)
	dst = binary.AppendVarint(dst, debit.BalanceAfter)
	dst = codec.AppendString(dst, to)
	dst = binary.AppendUvarint(dst, credit.Seq)
	return binary.AppendVarint(dst, credit.BalanceAfter)
}

// ReadJournal decodes journal items, calling fn with each entry in the
// order written; ok is false if b is not a whole number of items.
func ReadJournal(b []byte, fn func(*AccountEntry)) (ok bool) {
	for len(b) > 0 {
		kind := b[0]
		switch kind {
		case journalEntry:
			var ae AccountEntry
			if ae, b, ok = readJournalItem(b[1:]); !ok {
				return false
			}
			fn(&ae)
		case journalPair:
			var debit, credit AccountEntry
			if debit, credit, b, ok = readJournalPair(b[1:]); !ok {
				return false
			}
			fn(&debit)
			fn(&credit)
		default:
			return false
		}
	}
	return true
}

func readJournalPair(b []byte) (debit, credit AccountEntry, rest []byte, ok bool) {
	r := codec.Decoder{B: b}
	id, amount, memo, at := r.Str(), r.Varint(), r.Str(), time.Unix(0, r.Varint()).UTC()
	from, debitSeq, debitBalance := r.Str(), r.Uvarint(), r.Varint()
	to, creditSeq, creditBalance := r.Str(), r.Uvarint(), r.Varint()
	debit = AccountEntry{Account: from, Entry: Entry{Seq: debitSeq, TransferID: id, Direction: Debit,
		Amount: amount, BalanceAfter: debitBalance, Counterpart: to, Memo: memo, At: at}}
	credit = AccountEntry{Account: to, Entry: Entry{Seq: creditSeq, TransferID: id, Direction: Credit,
		Amount: amount, BalanceAfter: creditBalance, Counterpart: from, Memo: memo, At: at}}
	return debit, credit, r.B, r.Err == nil
}

// readJournalItem decodes an item of one entry without its kind byte, and
// returns it with the bytes after it; ok is false if b does not start with
// a whole item.
func readJournalItem(b []byte) (ae AccountEntry, rest []byte, ok bool) {
	r := codec.Decoder{B: b}
	ae.Account = r.Str()
	seq := r.Uvarint()
	if r.Err != nil {
		return AccountEntry{}, nil, false
	}
	ae.Entry, rest, ok = ReadEntry(r.B)
	ae.Seq = seq
	return ae, rest, ok
}

// EntryLog is a run of one account's consecutive history entries, oldest
// first, each encoded by AppendEntry. Copies of a log share its bytes, and
// appending never rewrites bytes a copy can see.
type EntryLog struct {
	buf []byte
	n   int
}

// Len returns the number of entries in l.
func (l EntryLog) Len() int { return l.n }

// Bytes returns the entries' encodings, oldest first.
func (l EntryLog) Bytes() []byte { return l.buf }

// Append appends e.
func (l *EntryLog) Append(e *Entry) {
	if l.buf == nil {
		// Most accounts gather several entries before a sweep chunks
		// them; growing from one entry would copy them at 1, 2 and 4.
		l.buf = make([]byte, 0, 256)
	}
	l.buf = AppendEntry(l.buf, e)
	l.n++
}

// AppendNewest appends to out the entries of encoded, a run of n entries
// oldest first whose oldest is numbered first, that have seq < before,
// newest first, until out holds limit. Only the entries appended are
// decoded. ok is false if encoded does not hold n whole entries.
func AppendNewest(out []Entry, encoded []byte, n int, first, before uint64, limit int) (_ []Entry, ok bool) {
	if before <= first || len(out) >= limit {
		return out, true
	}
	// Entries have varying lengths: find where each starts, then decode
	// from the newest wanted one backwards.
	var stack [64]int
	starts := stack[:0]
	b := encoded
	for range n {
		starts = append(starts, len(encoded)-len(b))
		if b, ok = skipEntry(b); !ok {
			return nil, false
		}
	}
	if len(b) != 0 {
		return nil, false
	}
	newest := min(uint64(n), before-first) // entries [0, newest) qualify
	for i := int(newest) - 1; i >= 0 && len(out) < limit; i-- {
		e, _, ok := ReadEntry(encoded[starts[i]:])
		if !ok {
			return nil, false
		}
		e.Seq = first + uint64(i)
		out = append(out, e)
	}
	return out, true
}

// AppendNewest appends to out l's entries with seq < before, newest first,
// until out holds limit; first is the seq of l's oldest entry.
func (l EntryLog) AppendNewest(out []Entry, first, before uint64, limit int) []Entry {
	out, ok := AppendNewest(out, l.buf, l.n, first, before, limit)
	if !ok {
		panic("ledger: corrupt entry log") // the Book encoded every byte of it
	}
	return out
}
