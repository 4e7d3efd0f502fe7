package kv

import "errors"

// Write is a write applied, and readable, but perhaps not yet durable.
type Write interface {
	// Wait returns once the write is durable, or why it could not be. It
	// must be called exactly once.
	Wait() error
}

// Entries walks a key range's entries in key order: a snapshot of one
// process's store, or in cluster mode the merge of the parts each
// partition's owner reads. It must be closed.
type Entries interface {
	// Next returns the next entry, or ok false at the end of the range or
	// on an error (see Err). key and value are valid until the next call.
	Next() (key, value []byte, ok bool)
	// Err is the error that ended the walk early, if any.
	Err() error
	// Close releases what the walk holds.
	Close() error
}

// ErrUnavailable is the error, or wraps it, of an operation whose entries
// did not answer in time (in cluster mode, the key's partition owner): the
// client may retry.
var ErrUnavailable = errors.New("key-value entries unavailable")
