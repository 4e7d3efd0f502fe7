package httpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
)

// H2CClient is HTTP/2 over cleartext with prior knowledge (h2c), as
// ticket-master's load client speaks it, or over TLS for an https://
// target: Conns connections, each carrying the streams of many Endpoints
// at once (golang.org/x/net/http2's Transport; see HTTPClient.H2Events for
// what the server did to them).
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

// h2Pool spreads Endpoints over conns HTTP/2 connections, each kept by an
// h2Conn. A request beyond the server's stream limit waits on its
// connection for a stream to end rather than opening another connection.
//
// The connections are net/http's own h2c (http.Transport.NewClientConn),
// but not its pool: with StrictMaxConcurrentRequests, the pool reserves a
// stream for every request that asks, past the server's limit, and the
// request that holds the connection's header lock then waits for a slot
// those very reservations fill, forever (golang/go#70809: no request
// completes once the workers outnumber the connections' streams). A
// ClientConn used directly reserves nothing: its requests wait for the
// streams that are open, which end. It also costs the load generator less
// CPU per reservation than the pool (docs/BENCHMARKS.md, "Figures behind
// the code").
type h2Pool struct {
	conns []*h2Conn
	next  atomic.Uint32
	*h2Log
}

// h2Log counts what servers did to a client's HTTP/2 connections.
type h2Log struct {
	mu     sync.Mutex
	events H2Events
}

func newH2Log() *h2Log {
	return &h2Log{events: H2Events{GoAways: map[string]int64{}, Resets: map[string]int64{}, ConnErrors: map[string]int64{}}}
}

// newH2Pool makes conns connections: h2c, or with tc HTTP/2 over TLS
// (ALPN h2), for https:// targets.
func newH2Pool(conns int, wire *wireCounters, tc *tls.Config) *h2Pool {
	p := &h2Pool{h2Log: newH2Log()}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	// Prior knowledge: over TLS the dialer below has made the handshake,
	// and net/http, seeing no *tls.Conn, speaks HTTP/2 on the connection
	// as it is, so frameConn reads the frames in the clear.
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	for range conns {
		c := new(h2Conn)
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			p.count(func(e *H2Events) { e.Dials++ })
			conn := wire.wrap(raw)
			if tc != nil {
				if conn, err = handshakeH2(ctx, conn, addr, tc); err != nil {
					return nil, err
				}
			}
			fc := &frameConn{Conn: conn, pool: p, ready: make(chan struct{})}
			c.frames.Store(fc)
			return fc, nil
		}
		c.t = &http.Transport{Protocols: protocols, DialContext: dial, DisableCompression: true}
		if tc != nil {
			c.t.DialTLSContext = dial
		}
		p.conns = append(p.conns, c)
	}
	return p
}

// handshakeH2 makes conn a TLS client connection to addr, configured by
// cfg, that has agreed on HTTP/2 (ALPN h2).
func handshakeH2(ctx context.Context, conn net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	cfg = cfg.Clone()
	cfg.ServerName, cfg.NextProtos = host, []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		_ = tc.Close()
		return nil, fmt.Errorf("bench: %s agreed on %q over TLS, not h2", addr, p)
	}
	return tc, nil
}

// transport is the next Endpoint's connection, round robin.
func (p *h2Pool) transport() http.RoundTripper {
	return p.conns[int(p.next.Add(1)-1)%len(p.conns)]
}

// h2Conn is one of the pool's connections: it dials when first used, and
// again once the server has closed the connection it had or told it to go
// away. Streams under way on a connection told to go away finish there.
type h2Conn struct {
	t      *http.Transport
	frames atomic.Pointer[frameConn] // the last connection dialled
	mu     sync.Mutex
	cc     *http.ClientConn
	old    []*http.ClientConn // replaced, closed with the pool
}

// RoundTrip sends req as a stream of the connection. A stream the server
// did not process is sent again, up to h2Retries times, as net/http's
// Transport does (and so ticket-master's client): one refused
// (REFUSED_STREAM, or PROTOCOL_ERROR for a stream that came as another
// ended, golang/go#47635) or sent to a connection that was going away.
func (c *h2Conn) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		cc, err := c.conn(req)
		if err != nil {
			return nil, err
		}
		resp, err := cc.RoundTrip(req)
		if err == nil || attempt == h2Retries || !unprocessed(err) || req.Body != nil && req.GetBody == nil {
			return resp, err
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// h2Retries bounds the retries of a stream the server did not process.
const h2Retries = 6

// unprocessed reports whether err says the server did not process the
// stream. net/http keeps its HTTP/2 error types unexported, so their
// text is all there is to go by.
func unprocessed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "; REFUSED_STREAM;") || strings.Contains(s, "; PROTOCOL_ERROR; received from peer") ||
		strings.Contains(s, "client conn not usable") || strings.Contains(s, "received Server's graceful shutdown GOAWAY")
}

// conn is the connection in use, dialled anew if there is none or it is
// gone or going away.
func (c *h2Conn) conn(req *http.Request) (*http.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cc != nil && c.cc.Err() == nil && !c.frames.Load().goingAway.Load() {
		return c.cc, nil
	}
	if c.cc != nil {
		c.old, c.cc = append(c.old, c.cc), nil
	}
	cc, err := c.t.NewClientConn(req.Context(), req.URL.Scheme, req.URL.Host)
	if err != nil {
		return nil, err
	}
	// Until it has applied the server's SETTINGS the client assumes 100
	// streams may be open, and the server refuses those past its own limit
	// (REFUSED_STREAM); waiting for its acknowledgement keeps the resets
	// counted the server's own.
	select {
	case <-c.frames.Load().ready:
	case <-req.Context().Done():
		_ = cc.Close()
		return nil, req.Context().Err()
	}
	c.cc = cc
	return cc, nil
}

func (c *h2Conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range append(c.old, c.cc) {
		if cc != nil {
			_ = cc.Close()
		}
	}
	c.cc, c.old = nil, nil
}

func (l *h2Log) count(f func(*H2Events)) {
	l.mu.Lock()
	f(&l.events)
	l.mu.Unlock()
}

// snapshot copies the events so far.
func (l *h2Log) snapshot() H2Events {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events
	e.GoAways, e.Resets, e.ConnErrors = maps.Clone(e.GoAways), maps.Clone(e.Resets), maps.Clone(e.ConnErrors)
	return e
}

func (p *h2Pool) close() {
	for _, c := range p.conns {
		c.close()
	}
}

// frameConn watches the frames a server sends on one connection, and the
// client's own until it acknowledges the server's SETTINGS.
type frameConn struct {
	net.Conn
	pool      *h2Pool
	scan      frameScanner
	closed    atomic.Bool
	goingAway atomic.Bool // the server sent GOAWAY
	// ready is closed once the client has acknowledged the server's
	// SETTINGS, which it does after applying them (so its stream limit is
	// the server's), or the connection ends first. acks follows the
	// client's writes until then; net/http writes under its connection's
	// write lock, one at a time.
	ready     chan struct{}
	readyOnce sync.Once
	acks      ackScanner
}

func (c *frameConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.scan.feed(b[:n], c.frame)
	if err != nil {
		c.readyOnce.Do(func() { close(c.ready) })
		if !c.closed.Load() {
			c.pool.count(func(e *H2Events) { e.ConnErrors[connErrorKey(err)]++ })
		}
	}
	return n, err
}

func (c *frameConn) Write(b []byte) (int, error) {
	if !c.acks.seen && c.acks.feed(b) {
		c.readyOnce.Do(func() { close(c.ready) })
	}
	return c.Conn.Write(b)
}

// ackScanner follows a client's bytes, its preface and then its frames'
// headers, until it sees a SETTINGS acknowledgement.
type ackScanner struct {
	preface int // preface bytes passed
	hdr     [9]byte
	nhdr    int
	left    uint32 // payload bytes still to pass
	seen    bool
}

// feed passes p and reports whether it holds the acknowledgement.
func (s *ackScanner) feed(p []byte) bool {
	skip := min(len(p), len(http2.ClientPreface)-s.preface)
	s.preface, p = s.preface+skip, p[skip:]
	for len(p) > 0 && !s.seen {
		if s.left > 0 {
			take := min(uint32(len(p)), s.left)
			s.left, p = s.left-take, p[take:]
			continue
		}
		c := copy(s.hdr[s.nhdr:], p)
		s.nhdr, p = s.nhdr+c, p[c:]
		if s.nhdr < len(s.hdr) {
			break
		}
		s.nhdr = 0
		s.left = uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2])
		s.seen = http2.FrameType(s.hdr[3]) == http2.FrameSettings && http2.Flags(s.hdr[4]).Has(http2.FlagSettingsAck)
	}
	return s.seen
}

func (c *frameConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *frameConn) frame(typ http2.FrameType, code http2.ErrCode) {
	switch typ {
	case http2.FrameGoAway:
		c.goingAway.Store(true)
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
// payload) and reports each GOAWAY and RST_STREAM with its error code, and
// each SETTINGS (code 0). A server's preface is a SETTINGS frame, so its
// first byte starts a frame.
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
	switch typ := http2.FrameType(s.hdr[3]); {
	case typ == http2.FrameSettings:
		frame(typ, 0)
	case s.want > 0 && s.ncode == s.want:
		c := s.code[s.want-4 : s.want]
		frame(typ, http2.ErrCode(uint32(c[0])<<24|uint32(c[1])<<16|uint32(c[2])<<8|uint32(c[3])))
	}
	s.nhdr = 0
}
