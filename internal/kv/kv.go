// Package kv holds the rules of surge's key-value storage (docs/API.md),
// the polis highload-dht API: what a key may be and how large a value may
// grow.
// It is plain code with no I/O; storage and transport apply its rules.
package kv

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is the longest key, in bytes. A key travels in the request
// line (GET /v0/entity?id=…), so it is bounded far below what a URL may
// carry.
const MaxKeyBytes = 1024

// Value size limits, in bytes. A value is held in memory whole while it is
// written, so the server bounds it; DefaultMaxValueBytes is the limit unless
// the operator sets another one, at most MaxValueLimit.
const (
	DefaultMaxValueBytes = 1 << 20
	MaxValueLimit        = 64 << 20
)

// Reasons a key is refused. They read well after "id: " or "start: ".
var (
	ErrKeyEmpty    = errors.New("missing or empty")
	ErrKeyTooLong  = fmt.Errorf("longer than %d bytes", MaxKeyBytes)
	ErrKeyNotUTF8  = errors.New("not valid UTF-8")
	ErrKeyNewline  = errors.New(`contains a newline, which separates key from value in range replies`)
	ErrValueTooBig = errors.New("value too large")
)

// CheckKey reports why key cannot be a key, or nil if it can. Keys are
// non-empty UTF-8 text of at most MaxKeyBytes bytes without a newline: a
// range reply sends each entry as key, newline, value, so a newline in a
// key would make the entry impossible to split.
func CheckKey(key string) error {
	switch {
	case key == "":
		return ErrKeyEmpty
	case len(key) > MaxKeyBytes:
		return ErrKeyTooLong
	case strings.IndexByte(key, '\n') >= 0:
		return ErrKeyNewline
	case !utf8.ValidString(key):
		return ErrKeyNotUTF8
	}
	return nil
}

// CheckMaxValue reports whether n is an acceptable value size limit.
func CheckMaxValue(n int) error {
	if n < 0 || n > MaxValueLimit {
		return fmt.Errorf("the value size limit must be between 0 and %d bytes, not %d", MaxValueLimit, n)
	}
	return nil
}
