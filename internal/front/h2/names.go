package h2

import (
	"net/http"
	"strings"

	"golang.org/x/net/http2/hpack"
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

// hpackField is the field to encode; values that carry secrets are never
// indexed (RFC 7541 §7.1.3).
func hpackField(name, value string) hpack.HeaderField {
	sensitive := name == "set-cookie" || name == "authorization"
	return hpack.HeaderField{Name: name, Value: value, Sensitive: sensitive}
}
