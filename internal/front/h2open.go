package front

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A prior-knowledge HTTP/2 connection names its first request only in a
// HEADERS frame, after the client's preface and SETTINGS. grpc-go clients,
// and strict clients such as h2spec, send nothing more until the server
// has sent its SETTINGS and acknowledged theirs. So the front opens the
// connection itself, as RFC 9113 §3.4 asks of a server: its SETTINGS
// first, then the acknowledgement of the client's, and only then does it
// read on to the first request's headers and hand the connection over.
//
// The client must see one opening, not the front's and then the server's.
// The front's SETTINGS are net/http's own (read from a net/http server of
// the same configuration, openingSettings), less any that grpc-go does not
// honour, so they hold whichever server takes the connection. The server
// then replays the opening from the client's preface on and writes its own
// SETTINGS and acknowledgement, which openedConn cuts: net/http's SETTINGS
// (the front sent the same), and the acknowledgement of the client's
// SETTINGS from either server (the front sent it). grpc-go's SETTINGS go
// through as a later change of settings, which RFC 9113 §6.5 allows at any
// time. The client's acknowledgement of the front's SETTINGS reaches the
// server as the acknowledgement of its own; grpc-go ignores it.

// maxHTTP2Sniff bounds what the sniffer reads of a connection's opening:
// the preface, a few control frames and one request's headers.
const maxHTTP2Sniff = 64 << 10

var errSniffTooLong = errors.New("front: HTTP/2 opening too long to route")

// RFC 9113's initial flow-control window, and the largest.
const (
	initialWindow = 64<<10 - 1
	maxWindow     = 1<<31 - 1
)

// settingsAck is a SETTINGS frame with the ACK flag.
var settingsAck = []byte{0, 0, 0, byte(http2.FrameSettings), byte(http2.FlagSettingsAck), 0, 0, 0, 0}

// h2Opening is how the front opened an HTTP/2 connection: what the server
// that takes it must leave unsaid.
type h2Opening struct {
	isGRPC bool
	// acked is set if the front acknowledged the client's first SETTINGS,
	// which end firstEnd bytes into the replay.
	acked    bool
	firstEnd int
}

// sniffHTTP2 opens a connection that began with the HTTP/2 preface (head
// holds what was read of it) and reads on until its first request shows
// whether it is gRPC. It returns the bytes to replay to the server that
// serves it. settings is the front's SETTINGS frame. A frame the front
// cannot make sense of goes to net/http, which answers it as RFC 9113
// asks. On an error the connection is not worth serving: it timed out,
// closed, or sent more than maxHTTP2Sniff before its first request.
func sniffHTTP2(c net.Conn, head []byte, timeout time.Duration, settings []byte) (replay []byte, o h2Opening, err error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(settings); err != nil {
		return nil, o, err
	}
	r := &sniffReader{c: c, buf: head}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil {
		return nil, o, err
	}
	if string(preface) != http2.ClientPreface {
		return nil, o, errors.New("front: malformed HTTP/2 preface")
	}
	fr := http2.NewFramer(nil, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = maxHTTP2Sniff
	window := int64(initialWindow) // the connection's send window, as the client widens it
	for first := true; ; first = false {
		f, err := fr.ReadFrame()
		if err != nil {
			if brokenConn(err) {
				return nil, o, err
			}
			return r.buf, o, nil // a protocol error: net/http answers it
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() && !first {
				continue // of the front's SETTINGS
			}
			if !first || f.IsAck() || f.ForeachSetting(http2.Setting.Valid) != nil {
				return r.buf, o, nil
			}
			if _, err := c.Write(settingsAck); err != nil {
				return nil, o, err
			}
			o.acked, o.firstEnd = true, r.pos
			continue
		case *http2.MetaHeadersFrame:
			o.isGRPC = !first && isGRPCRequest(f)
			return r.buf, o, nil
		case *http2.WindowUpdateFrame:
			// A client may widen the connection's window before its first
			// request; past the largest window, net/http answers it.
			window += int64(f.Increment)
			if !first && f.StreamID == 0 && window <= maxWindow {
				continue
			}
		}
		return r.buf, o, nil
	}
}

// brokenConn reports whether err ended the connection itself, rather than
// naming a protocol error that the server should answer.
func brokenConn(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, errSniffTooLong)
}

// isGRPCRequest reports whether h opens a gRPC call (not gRPC-Web, which
// connect-go serves).
func isGRPCRequest(h *http2.MetaHeadersFrame) bool {
	for _, f := range h.RegularFields() {
		if f.Name == "content-type" {
			return strings.HasPrefix(f.Value, "application/grpc") && !strings.HasPrefix(f.Value, "application/grpc-web")
		}
	}
	return false
}

// sniffReader reads c, keeping everything read in buf; pos is how much of
// buf the reader has given out.
type sniffReader struct {
	c   net.Conn
	buf []byte
	pos int
}

func (r *sniffReader) Read(p []byte) (int, error) {
	if r.pos == len(r.buf) {
		if len(r.buf) >= maxHTTP2Sniff {
			return 0, errSniffTooLong
		}
		r.buf = append(r.buf, make([]byte, 4096)...)[:len(r.buf)]
		n, err := r.c.Read(r.buf[len(r.buf):min(cap(r.buf), maxHTTP2Sniff)])
		r.buf = r.buf[:len(r.buf)+n]
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}

// openedConn is an HTTP/2 connection the front opened: it replays the
// sniffed bytes to the server and cuts from the server's first writes
// what the front already sent (see the top of this file).
//
// A server may answer several SETTINGS with one acknowledgement (net/http
// does when they arrive together), and then cutting the first would leave
// a later SETTINGS unacknowledged. So the server reads only up to the end
// of the client's first SETTINGS until it has written the acknowledgement
// that is cut.
type openedConn struct {
	replayConn
	// The reader's side: bytes of head the server may read before its
	// acknowledgement, and whether a read must wait for it.
	readable int
	waiting  bool
	ackCut   chan struct{} // closed once the server's acknowledgement is cut
	closed   chan struct{} // closed by Close
	close    sync.Once

	// The writer's side.
	mu          sync.Mutex // orders the server's writes with Close
	cutSettings bool       // the server's first SETTINGS are still to be cut
	cutAck      bool       // the server's first SETTINGS acknowledgement is still to be cut
	hdr         [frameHeaderLen]byte
	have        int  // bytes of hdr written by the server
	payload     int  // bytes of the current frame's payload still to come
	dropping    bool // the current frame is being cut
}

func newOpenedConn(c net.Conn, replay []byte, o h2Opening) *openedConn {
	return &openedConn{
		replayConn: replayConn{Conn: c, head: replay},
		readable:   o.firstEnd, waiting: o.acked,
		ackCut: make(chan struct{}), closed: make(chan struct{}),
		cutSettings: !o.isGRPC, cutAck: o.acked,
	}
}

// Read replays the opening, holding what follows the client's first
// SETTINGS back until the server has acknowledged them.
func (c *openedConn) Read(p []byte) (int, error) {
	if !c.waiting {
		return c.replayConn.Read(p)
	}
	if c.readable > 0 {
		n := copy(p[:min(len(p), c.readable)], c.head)
		c.head = c.head[n:]
		c.readable -= n
		return n, nil
	}
	select {
	case <-c.ackCut:
		c.waiting = false
		return c.replayConn.Read(p)
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

// Close ends a read waiting for the server's acknowledgement, then closes.
func (c *openedConn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return c.replayConn.Close()
}

// Write writes p less the frames still to be cut.
func (c *openedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passing() {
		return c.replayConn.Write(p)
	}
	var out []byte
	for i := 0; i < len(p); {
		if c.passing() {
			out = append(out, p[i:]...)
			break
		}
		if c.payload > 0 {
			k := min(c.payload, len(p)-i)
			if !c.dropping {
				out = append(out, p[i:i+k]...)
			}
			c.payload -= k
			i += k
			continue
		}
		k := copy(c.hdr[c.have:], p[i:])
		c.have += k
		i += k
		if c.have < frameHeaderLen {
			break // the header's end comes with the next write
		}
		c.have = 0
		c.payload = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		c.dropping = c.cut()
		if !c.dropping {
			out = append(out, c.hdr[:]...)
		}
	}
	if len(out) > 0 {
		if _, err := c.replayConn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// passing reports whether nothing is left to cut: the rest of the
// connection passes unread.
func (c *openedConn) passing() bool {
	return !c.cutSettings && !c.cutAck && c.payload == 0 && c.have == 0
}

// cut reports whether the frame whose header is in c.hdr is one to cut,
// and marks it cut.
func (c *openedConn) cut() bool {
	if http2.FrameType(c.hdr[3]) != http2.FrameSettings {
		return false
	}
	switch ack := c.hdr[4]&byte(http2.FlagSettingsAck) != 0; {
	case ack && c.cutAck:
		c.cutAck = false
		close(c.ackCut)
	case !ack && c.cutSettings:
		c.cutSettings = false
	default:
		return false
	}
	return true
}

// openingSettings returns the SETTINGS frame the front opens HTTP/2
// connections with: those of the server of HTTP/2 connections that are not
// gRPC's (see the top of this file).
func (s *Server) openingSettings() ([]byte, error) {
	if s.h2 == nil {
		return netSettings(s.slow)
	}
	var b bytes.Buffer
	err := http2.NewFramer(&b, nil).WriteSettings(s.h2.Settings()...)
	return b.Bytes(), err
}

// netSettings returns the SETTINGS frame srv's HTTP/2 server sends first,
// read from a server of the same configuration over a pipe, less the
// settings grpc-go does not honour (extended CONNECT).
func netSettings(srv *http.Server) ([]byte, error) {
	probe := &http.Server{
		Handler: http.NotFoundHandler(), HTTP2: srv.HTTP2, Protocols: srv.Protocols,
		MaxHeaderBytes: srv.MaxHeaderBytes, ErrorLog: log.New(io.Discard, "", 0),
	}
	client, server := net.Pipe()
	defer client.Close()
	ln := &pipeListener{c: server, closed: make(chan struct{})}
	defer ln.Close()
	go func() { _ = probe.Serve(ln) }()
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = io.WriteString(client, http2.ClientPreface)
		_ = http2.NewFramer(client, nil).WriteSettings()
	}()
	f, err := http2.NewFramer(nil, client).ReadFrame()
	if err != nil {
		return nil, err
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return nil, errors.New("front: net/http's HTTP/2 server did not open with SETTINGS")
	}
	var kept []http2.Setting
	_ = sf.ForeachSetting(func(s http2.Setting) error {
		if s.ID != http2.SettingEnableConnectProtocol {
			kept = append(kept, s)
		}
		return nil
	})
	var b bytes.Buffer
	if err := http2.NewFramer(&b, nil).WriteSettings(kept...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pipeListener accepts one connection, then waits for Close.
type pipeListener struct {
	c      net.Conn
	once   sync.Once
	closed chan struct{}
	taken  bool
}

func (l *pipeListener) Accept() (net.Conn, error) {
	if !l.taken {
		l.taken = true
		return l.c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.c.LocalAddr() }
