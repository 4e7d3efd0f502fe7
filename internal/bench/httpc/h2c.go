package httpc

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
)

// H2CClient is HTTP/2 over cleartext with prior knowledge (h2c), as
// ticket-master's load client speaks it: Conns connections, each carrying
// the streams of many Endpoints at once (golang.org/x/net/http2's
// Transport; see HTTPClient.H2Events for what the server did to them).
const H2CClient ClientKind = "h2c"

// H2Events is what the server did to the h2c connections, read off the
// frames it sent: GOAWAYs and stream resets by error code, and the
// connections that ended without the client closing them.
type H2Events struct {
	// Dials counts connections opened: Conns at first, one more each time
	// a connection was lost or told to go away and a request needed it.
	Dials int64 `json:"dials"`
	// GoAways counts GOAWAY frames by error code ("NO_ERROR",
	// "ENHANCE_YOUR_CALM", ...); Resets counts RST_STREAM frames.
	GoAways map[string]int64 `json:"goaways,omitempty"`
	Resets  map[string]int64 `json:"resets,omitempty"`
	// ConnErrors counts connections that ended while the client still
	// used them, by how ("EOF", "connection reset", ...).
	ConnErrors map[string]int64 `json:"conn_errors,omitempty"`
}

// h2Pool spreads Endpoints over conns HTTP/2 transports (net/http's own
// h2c), each of which keeps one connection and queues requests beyond the
// server's stream limit on it rather than opening another.
type h2Pool struct {
	transports []*http.Transport
	next       atomic.Uint32

	mu     sync.Mutex
	events H2Events
}

func newH2Pool(conns int, wire *wireCounters) *h2Pool {
	p := &h2Pool{events: H2Events{GoAways: map[string]int64{}, Resets: map[string]int64{}, ConnErrors: map[string]int64{}}}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	for range conns {
		protocols := new(http.Protocols)
		protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge, for http:// URLs
		p.transports = append(p.transports, &http.Transport{
			Protocols: protocols,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dialer.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				p.count(func(e *H2Events) { e.Dials++ })
				return wire.wrap(&frameConn{Conn: conn, pool: p}), nil
			},
			HTTP2:              &http.HTTP2Config{StrictMaxConcurrentRequests: true},
			MaxConnsPerHost:    1, // else concurrent first requests each dial one
			DisableCompression: true,
		})
	}
	return p
}

// transport is the next Endpoint's connection, round robin.
func (p *h2Pool) transport() http.RoundTripper {
	return p.transports[int(p.next.Add(1)-1)%len(p.transports)]
}

func (p *h2Pool) count(f func(*H2Events)) {
	p.mu.Lock()
	f(&p.events)
	p.mu.Unlock()
}

// snapshot copies the events so far.
func (p *h2Pool) snapshot() H2Events {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.events
	e.GoAways, e.Resets, e.ConnErrors = maps.Clone(e.GoAways), maps.Clone(e.Resets), maps.Clone(e.ConnErrors)
	return e
}

func (p *h2Pool) close() {
	for _, t := range p.transports {
		t.CloseIdleConnections()
	}
}

// frameConn watches the frames a server sends on one connection.
type frameConn struct {
	net.Conn
	pool   *h2Pool
	scan   frameScanner
	closed atomic.Bool
}

func (c *frameConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.scan.feed(b[:n], c.frame)
	if err != nil && !c.closed.Load() {
		c.pool.count(func(e *H2Events) { e.ConnErrors[connErrorKey(err)]++ })
	}
	return n, err
}

func (c *frameConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *frameConn) frame(typ http2.FrameType, code http2.ErrCode) {
	switch typ {
	case http2.FrameGoAway:
		c.pool.count(func(e *H2Events) { e.GoAways[code.String()]++ })
	case http2.FrameRSTStream:
		c.pool.count(func(e *H2Events) { e.Resets[code.String()]++ })
	}
}

func connErrorKey(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "read error"
}

// frameScanner follows the frames in a server's byte stream (RFC 9113
// §4.1: a 9-byte header of length, type, flags and stream, then the
// payload) and reports each GOAWAY and RST_STREAM with its error code. A
// server sends no preface of its own, so its first byte starts a frame.
type frameScanner struct {
	hdr  [9]byte
	nhdr int
	left uint32 // payload bytes still to pass
	// code collects the payload bytes up to the error code: 8 for GOAWAY
	// (last stream id, code), 4 for RST_STREAM.
	code  [8]byte
	ncode int
	want  int
}

func (s *frameScanner) feed(p []byte, frame func(http2.FrameType, http2.ErrCode)) {
	for len(p) > 0 {
		if s.nhdr < len(s.hdr) {
			c := copy(s.hdr[s.nhdr:], p)
			s.nhdr, p = s.nhdr+c, p[c:]
			if s.nhdr < len(s.hdr) {
				return
			}
			s.left = uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2])
			s.ncode, s.want = 0, 0
			switch http2.FrameType(s.hdr[3]) {
			case http2.FrameGoAway:
				s.want = 8
			case http2.FrameRSTStream:
				s.want = 4
			}
		}
		take := min(uint32(len(p)), s.left)
		if s.ncode < s.want {
			s.ncode += copy(s.code[s.ncode:s.want], p[:take])
		}
		s.left, p = s.left-take, p[take:]
		if s.left == 0 {
			s.end(frame)
		}
	}
}

// end closes the current frame, reporting it if it is one of interest.
func (s *frameScanner) end(frame func(http2.FrameType, http2.ErrCode)) {
	if s.want > 0 && s.ncode == s.want {
		c := s.code[s.want-4 : s.want]
		frame(http2.FrameType(s.hdr[3]), http2.ErrCode(uint32(c[0])<<24|uint32(c[1])<<16|uint32(c[2])<<8|uint32(c[3])))
	}
	s.nhdr = 0
}
