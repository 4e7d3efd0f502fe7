package front

import (
	"io"
	"net/http"
	"time"
)

// http2Config is net/http's HTTP/2 configuration under l: at most
// MaxStreams streams per connection, and a ping to a connection silent
// for a minute, which is closed if the ping goes unanswered. Its frame
// size and stream window are grpc-go's (RFC 9113's defaults), because the
// front opens connections for either server with net/http's SETTINGS
// (h2open.go), which must hold for both.
func http2Config(l Limits) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:      int(l.MaxStreams),
		MaxReadFrameSize:          defaultMaxFrameSize,
		MaxReceiveBufferPerStream: initialWindow,
		SendPingTimeout:           time.Minute,
	}
}

// defaultMaxFrameSize is RFC 9113's initial frame size limit.
const defaultMaxFrameSize = 16 << 10

// bodyDeadline bounds reading each request's body to d on the net/http
// path: a slow body gets an error at the deadline and its handler
// answers or gives up. Once the body is read the deadline is lifted, so
// that a stream whose request has ended (the dashboard's events, a
// server-streaming RPC) lives on.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its request's read deadline at the end of the body.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
