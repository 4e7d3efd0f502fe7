// Package jsonw appends JSON to byte slices: strings escaped exactly as
// encoding/json escapes them, and object members by name.
//
// surge's hot replies are built this way rather than with encoding/json: the
// shapes are fixed and small (or, for the batch reply, up to 8,190 items),
// and appending costs no reflection and no allocation per item. Member names
// are passed with their punctuation (`,"id":`) so that each is one append.
package jsonw

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// TimeLayout is RFC 3339 with all nine digits of nanoseconds, so that
// timestamps have a fixed width and sort as text.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

const hexDigits = "0123456789abcdef"

// safeChar marks the bytes a JSON string may carry unescaped. <, > and & are
// escaped as encoding/json does, so replies are safe to embed in HTML.
var safeChar = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// and U+2028/U+2029 are escaped for JavaScript's sake.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safeChar[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			b = appendEscapedByte(b, c)
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = appendRuneEscape(b, r)
			i += n
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscapedByte appends the escape for an ASCII byte that needs one.
func appendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	return appendRuneEscape(b, rune(c))
}

// appendRuneEscape appends r (below U+10000) as \uXXXX.
func appendRuneEscape(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// AppendKey appends ,"name": (or "name": as the first member; the caller
// passes the leading punctuation in name to keep this a single append).
func AppendKey(b []byte, name string) []byte { return append(b, name...) }

// AppendInt appends the member name (with its punctuation) and v.
func AppendInt(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(AppendKey(b, name), v, 10)
}

// AppendUint appends the member name and v.
func AppendUint(b []byte, name string, v uint64) []byte {
	return strconv.AppendUint(AppendKey(b, name), v, 10)
}

// AppendBool appends the member name and v.
func AppendBool(b []byte, name string, v bool) []byte {
	return strconv.AppendBool(AppendKey(b, name), v)
}

// AppendStr appends the member name and v as a JSON string.
func AppendStr(b []byte, name, v string) []byte {
	return AppendString(AppendKey(b, name), v)
}

// AppendTime appends the member name and t in TimeLayout, as a string.
func AppendTime(b []byte, name string, t time.Time) []byte {
	b = append(AppendKey(b, name), '"')
	return append(t.UTC().AppendFormat(b, TimeLayout), '"')
}
