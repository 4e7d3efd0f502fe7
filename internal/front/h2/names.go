package h2

import (
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/net/http2/hpack"

	"github.com/surge-dev/surge/internal/hpackw"
)

// Header names the server's requests and responses carry most, in both
// spellings: a name found here costs no allocation either way.
var (
	toCanonical = map[string]string{}
	toLower     = map[string]string{}
)

func init() {
	for _, k := range []string{
		"Accept", "Accept-Encoding", "Accept-Language", "Access-Control-Allow-Origin",
		"Access-Control-Expose-Headers", "Authorization", "Cache-Control", "Content-Encoding",
		"Content-Length", "Content-Type", "Cookie", "Date", "Etag", "Grpc-Message", "Grpc-Status",
		"Host", "Idempotency-Key", "If-Match", "If-None-Match", "Last-Modified", "Location",
		"Origin", "Referer", "Retry-After", "Set-Cookie", "Te", "Trailer", "User-Agent", "Vary",
		"Www-Authenticate", "X-Forwarded-For", "X-Request-Id", "Traceparent", "Tracestate",
		"Connect-Protocol-Version", "Connect-Timeout-Ms", "Grpc-Timeout", "Sec-Websocket-Protocol",
		"Reservation-Token", "X-Content-Type-Options",
	} {
		l := strings.ToLower(k)
		toCanonical[l] = k
		toLower[k] = l
	}
}

// canonical is the canonical form (http.CanonicalHeaderKey) of a field
// name as it arrives, in lower case.
func canonical(name string) string {
	if k, ok := toCanonical[name]; ok {
		return k
	}
	return http.CanonicalHeaderKey(name)
}

// lower is the wire form of header key k.
func lower(k string) string {
	if l, ok := toLower[k]; ok {
		return l
	}
	return strings.ToLower(k)
}

// HPACK (RFC 7541) encoding without the dynamic table: every field is a
// literal never entered in a table, its name an index of the static table
// when it has one, its value raw (no Huffman code). x/net's encoder
// searches its tables by hashing every field, a visible share of the
// server's CPU in a profile under bench spike (docs/BENCHMARKS.md,
// "Server CPU per reservation over HTTP/2"); responses are a few small
// fields, for which the table saves the client a few bytes, not the
// server work.

// staticNames maps the names of the static table to their first index;
// staticStatus the :status values it holds.
var (
	staticNames  = map[string]uint64{}
	staticStatus = map[string]byte{}
)

func init() {
	// The static table, read from x/net's decoder: index i is the field
	// an indexed representation of i decodes to.
	d := hpack.NewDecoder(0, nil)
	for i := byte(1); i <= 61; i++ {
		fs, err := d.DecodeFull([]byte{0x80 | i})
		if err != nil || len(fs) != 1 {
			panic("h2: reading HPACK's static table: " + fmt.Sprint(err))
		}
		if _, ok := staticNames[fs[0].Name]; !ok {
			staticNames[fs[0].Name] = uint64(i)
		}
		if fs[0].Name == ":status" {
			staticStatus[fs[0].Value] = 0x80 | i
		}
	}
}

// appendField appends the representation of name: value to b: a literal
// never indexed (RFC 7541 §6.2.3) for the fields that carry secrets, else
// a literal without indexing (§6.2.2); :status as indexed (§6.1) when the
// static table holds it.
func appendField(b []byte, name, value string) []byte {
	if name == ":status" {
		if ix, ok := staticStatus[value]; ok {
			return append(b, ix)
		}
	}
	first := byte(0x00)
	if name == "set-cookie" || name == "authorization" {
		first = 0x10
	}
	if ix, ok := staticNames[name]; ok {
		b = hpackw.AppendInt(b, first, 4, ix)
	} else {
		b = append(b, first)
		b = hpackw.AppendString(b, name)
	}
	return hpackw.AppendString(b, value)
}
