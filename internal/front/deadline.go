package front

import (
	"net/http"
	"time"
)

// http2Config is net/http's HTTP/2 configuration under l: at most
// MaxStreams streams per connection, and a ping to a connection silent
// for a minute, which is closed if the ping goes unanswered.
func http2Config(l Limits) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams: int(l.MaxStreams),
		SendPingTimeout:      time.Minute,
	}
}
