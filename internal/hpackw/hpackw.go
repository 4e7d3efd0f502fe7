// Package hpackw writes the parts of HPACK header blocks (RFC 7541) that
// golang.org/x/net/http2/hpack does not export on their own: integers of
// an n-bit prefix and raw string literals. The front's HTTP/2 server and
// the load lab's HTTP/2 client encode their header fields with them,
// without hpack.Encoder's dynamic table and its search.
package hpackw

// AppendString appends s as a raw string literal (RFC 7541 §5.2).
func AppendString[S string | []byte](b []byte, s S) []byte {
	b = AppendInt(b, 0, 7, uint64(len(s)))
	return append(b, s...)
}

// AppendInt appends v as an integer of an n-bit prefix (RFC 7541 §5.1),
// the prefix's byte carrying the bits of first above it.
func AppendInt(b []byte, first byte, n uint, v uint64) []byte {
	limit := uint64(1)<<n - 1
	if v < limit {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(limit))
	for v -= limit; v >= 128; v >>= 7 {
		b = append(b, byte(v&0x7f|0x80))
	}
	return append(b, byte(v))
}
