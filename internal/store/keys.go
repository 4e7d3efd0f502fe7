package store

import "time"

// Every workload keeps its records under a prefix of its own (its store
// package documents its layout): the ledger's start with 'l', ticketing's
// with 't', the wallet's with 's', key-value entries with "kv/".

// RecordVersion is the first byte of every workload's record values, so a
// later layout can tell its records from today's.
const RecordVersion = 1

// Key returns prefix followed by id, reusing dst's storage.
func Key(dst, prefix []byte, id string) []byte {
	return append(append(dst[:0], prefix...), id...)
}

// UpperBound returns the smallest key greater than every key with prefix p.
func UpperBound(p []byte) []byte {
	u := append([]byte(nil), p...)
	u[len(u)-1]++
	return u
}

// UnixNano is the UTC time of n nanoseconds since the Unix epoch, as
// records store times.
func UnixNano(n int64) time.Time { return time.Unix(0, n).UTC() }
