package front

import (
	"net/http"
	"time"
)

// http2Config is net/http's HTTP/2 configuration under l: at most
// MaxStreams streams per connection, an HPACK table of RFC 9113's
// default size for the client's headers (whose decoded list
// http.Server.MaxHeaderBytes bounds), and a ping to a connection silent
// for a minute, which is closed if the ping goes unanswered.
func http2Config(l Limits) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:      int(l.MaxStreams),
		MaxDecoderHeaderTableSize: 4096,
		SendPingTimeout:           time.Minute,
	}
}
