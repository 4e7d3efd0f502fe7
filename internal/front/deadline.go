package front

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// http2Config is net/http's HTTP/2 configuration under l: at most
// MaxStreams streams per connection, an HPACK table of RFC 9113's
// default size for the client's headers (whose decoded list
// http.Server.MaxHeaderBytes bounds), and a ping to a connection silent
// for a minute, which is closed if the ping goes unanswered. Its frame
// size and stream window are grpc-go's (RFC 9113's defaults), because the
// front opens connections for either server with net/http's SETTINGS
// (h2open.go), which must hold for both.
// Each protocol error net/http's HTTP/2 server answers is counted in
// errs by its kind, as net/http names it: the frame it answered with,
// its code and the cause, e.g. "stream_PROTOCOL_ERROR_over_max_streams".
func http2Config(l Limits, errs *prometheus.CounterVec) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:      int(l.MaxStreams),
		MaxDecoderHeaderTableSize: 4096,
		MaxReadFrameSize:          defaultMaxFrameSize,
		MaxReceiveBufferPerStream: initialWindow,
		SendPingTimeout:           time.Minute,
		CountError:                func(kind string) { errs.WithLabelValues(kind).Inc() },
	}
}

// newHTTP2Errors is the counter of http2Config's errors, registered with
// reg unless it is nil.
func newHTTP2Errors(reg prometheus.Registerer) *prometheus.CounterVec {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "surge_front_http2_errors_total",
		Help: "Protocol errors net/http's HTTP/2 server answered with a stream or connection error, by kind (net/http's names, e.g. stream_PROTOCOL_ERROR_over_max_streams: a stream past MAX_CONCURRENT_STREAMS refused).",
	}, []string{"kind"})
	if reg != nil {
		reg.MustRegister(errs)
	}
	return errs
}

// defaultMaxFrameSize is RFC 9113's initial frame size limit.
const defaultMaxFrameSize = 16 << 10
