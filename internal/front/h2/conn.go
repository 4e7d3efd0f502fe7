package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Bounds of a connection's queued output (see doc.go, "Writing").
const (
	// maxQueued is how many bytes of frames may wait for the writer
	// before a handler writing DATA waits for it.
	maxQueued = 128 << 10
	// maxControlQueued is how many may wait when the reader queues a
	// control frame: a client that sends PINGs, SETTINGS or resets
	// faster than it reads their answers is told ENHANCE_YOUR_CALM.
	maxControlQueued = 1 << 20
	// keptBuffer is the largest output buffer kept for the next write.
	keptBuffer = 256 << 10
	// maxResetRing bounds how many of the streams the server reset are
	// remembered (twice the stream limit, at most this), so that the
	// frames the client sent before it saw a reset are ignored rather
	// than answered as errors: a client whose requests were refused
	// before their bodies were sent would otherwise draw a reset for each
	// DATA frame in flight, which the rapid-reset guard counts.
	maxResetRing = 1024
	// maxWindow is the largest flow-control window (RFC 9113 §6.9.1).
	maxWindow = 1<<31 - 1
	// closeLinger bounds how long a connection ended with an error is
	// read, discarding, so that the GOAWAY reaches the client before the
	// close resets the connection.
	closeLinger = time.Second
)

// connError ends the connection with a GOAWAY of code.
type connError struct {
	code   http2.ErrCode
	reason string
}

func (e connError) Error() string { return "h2: connection error " + e.code.String() + ": " + e.reason }

var (
	errStreamGone = errors.New("h2: stream closed")
	errConnGone   = errors.New("h2: connection closed")
)

// conn is one HTTP/2 connection: a reader (the goroutine of ServeConn), a
// writer, and a goroutine per running handler.
type conn struct {
	srv    *Server
	nc     net.Conn
	fr     *http2.Framer // the reader's
	ctx    context.Context
	cancel context.CancelFunc
	remote string
	tls    *tls.ConnectionState
	kickc  chan struct{} // wakes the writer
	done   chan struct{} // closed when the writer has returned

	// The reader's alone.
	sawFirst bool
	// lastRead is when the reader last read a frame (UnixNano).
	lastRead atomic.Int64

	mu   sync.Mutex
	cond sync.Cond // a window grew, queued output was written, or the connection died
	// Guarded by mu.
	streams     map[uint32]*stream
	lastID      uint32 // the client's highest stream id
	out         []byte // frames for the writer
	wfr         *http2.Framer
	hbuf        []byte // a header block being encoded (names.go)
	sendConn    int64  // the connection's send window
	recvConn    int64  // the connection's receive window, as granted
	unackedConn int64  // body bytes consumed and not yet granted back
	peerWindow  int64  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame   uint32
	resets      []uint32 // the streams the server reset last, a ring made on the first
	resetNext   int
	sendWaiters int
	goingAway   bool
	final       bool // the writer writes what is queued and returns
	dead        bool // nothing more is written
	idle        *time.Timer
	pinger      *time.Timer // PingAfter's (ping.go)
	pingAt      time.Time   // when the unanswered PING was sent
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s, nc: nc, remote: nc.RemoteAddr().String(),
		kickc: make(chan struct{}, 1), done: make(chan struct{}),
		streams:    make(map[uint32]*stream),
		sendConn:   defaultStreamWindow,
		recvConn:   int64(s.connWindow()),
		peerWindow: defaultStreamWindow,
		peerFrame:  defaultMaxFrameSize,
	}
	c.cond.L = &c.mu
	c.tls = tlsState(nc)
	base := context.Background()
	if s.ConnContext != nil {
		base = s.ConnContext(base, nc)
	}
	c.ctx, c.cancel = context.WithCancel(base)
	c.fr = http2.NewFramer(nil, nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(headerTable, nil)
	c.fr.MaxHeaderListSize = s.maxHeaderList()
	c.fr.SetMaxReadFrameSize(s.maxFrameSize())
	c.wfr = http2.NewFramer(outWriter{c}, nil)
	return c
}

// tlsState is the TLS state of c or of a connection it wraps, nil without
// TLS.
func tlsState(c net.Conn) *tls.ConnectionState {
	for {
		switch v := c.(type) {
		case interface{ ConnectionState() tls.ConnectionState }:
			st := v.ConnectionState()
			return &st
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
}

// outWriter appends the write framer's frames to the queued output; mu
// is held.
type outWriter struct{ c *conn }

func (w outWriter) Write(p []byte) (int, error) {
	w.c.out = append(w.c.out, p...)
	return len(p), nil
}

// kick wakes the writer.
func (c *conn) kick() {
	select {
	case c.kickc <- struct{}{}:
	default:
	}
}

// serve runs the connection: it opens it, reads until it ends, and then
// closes it.
func (c *conn) serve() {
	go c.writeLoop()
	c.mu.Lock()
	_ = c.wfr.WriteSettings(c.srv.Settings()...)
	if d := c.recvConn - defaultStreamWindow; d > 0 {
		_ = c.wfr.WriteWindowUpdate(0, uint32(d))
	}
	if c.srv.IdleTimeout > 0 {
		c.idle = time.AfterFunc(c.srv.IdleTimeout, func() { c.goAway(http2.ErrCodeNo, "idle") })
	}
	if c.srv.PingAfter > 0 {
		c.lastRead.Store(time.Now().UnixNano())
		c.pinger = time.AfterFunc(c.srv.PingAfter, c.checkAlive)
	}
	c.mu.Unlock()
	c.kick()
	err := c.readPreface()
	if err == nil {
		err = c.readFrames()
	}
	c.finish(err)
}

// readPreface reads the client's preface within PrefaceTimeout; the
// deadline lasts until the client's first SETTINGS are read.
func (c *conn) readPreface() error {
	if t := c.srv.PrefaceTimeout; t > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(t))
	}
	var b [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil {
		return err
	}
	if string(b[:]) != http2.ClientPreface {
		return connError{http2.ErrCodeProtocol, "invalid preface"}
	}
	return nil
}

// readFrames reads and handles frames until the connection ends.
func (c *conn) readFrames() error {
	for {
		f, err := c.fr.ReadFrame()
		if c.pinger != nil {
			c.lastRead.Store(time.Now().UnixNano())
		}
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.streamError(se.StreamID, se.Code, "frame")
				continue
			}
			return readError(err)
		}
		if !c.sawFirst {
			if sf, ok := f.(*http2.SettingsFrame); !ok || sf.IsAck() {
				return connError{http2.ErrCodeProtocol, "preface not followed by SETTINGS"}
			}
			c.sawFirst = true
			if c.srv.PrefaceTimeout > 0 {
				_ = c.nc.SetReadDeadline(time.Time{})
			}
		}
		if err := c.handle(f); err != nil {
			return err
		}
	}
}

// readError is the connection error a framer's read error calls for.
func readError(err error) error {
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		return connError{http2.ErrCode(ce), "frame"}
	case errors.Is(err, http2.ErrFrameTooLarge):
		return connError{http2.ErrCodeFrameSize, "frame too large"}
	}
	return err
}

// handle acts on one frame.
func (c *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		_ = c.wfr.WritePing(true, f.Data)
		return c.queuedControlLocked()
	case *http2.RSTStreamFrame:
		return c.onReset(f)
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			c.streamError(f.StreamID, http2.ErrCodeProtocol, "priority_self")
		}
		return nil
	case *http2.GoAwayFrame:
		// The client will accept no pushed stream, which the server
		// never sends, and closes the connection once its streams end.
		return nil
	case *http2.PushPromiseFrame:
		return connError{http2.ErrCodeProtocol, "push_promise from client"}
	}
	return nil // unknown frame types are ignored (RFC 9113 §5.5)
}

// queuedControlLocked ends a connection whose client makes the server
// queue more control frames than it reads.
func (c *conn) queuedControlLocked() error {
	c.kick()
	if len(c.out) > maxControlQueued {
		return connError{http2.ErrCodeEnhanceYourCalm, "control frames unread"}
	}
	return nil
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := f.ForeachSetting(http2.Setting.Valid); err != nil {
		return readError(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := f.ForeachSetting(c.applyLocked)
	if err != nil {
		return err
	}
	_ = c.wfr.WriteSettingsAck()
	return c.queuedControlLocked()
}

// applyLocked applies one of the client's settings.
func (c *conn) applyLocked(s http2.Setting) error {
	switch s.ID {
	case http2.SettingMaxFrameSize:
		c.peerFrame = s.Val
	case http2.SettingInitialWindowSize:
		delta := int64(s.Val) - c.peerWindow
		c.peerWindow = int64(s.Val)
		for _, st := range c.streams {
			st.send += delta
			if st.send > maxWindow {
				return connError{http2.ErrCodeFlowControl, "initial window overflow"}
			}
		}
		c.wakeSendersLocked()
	}
	return nil
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		c.sendConn += inc
		if c.sendConn > maxWindow {
			return connError{http2.ErrCodeFlowControl, "window overflow"}
		}
		c.wakeSendersLocked()
		return nil
	}
	st := c.streams[f.StreamID]
	if st == nil {
		if f.StreamID > c.lastID {
			return connError{http2.ErrCodeProtocol, "window_update on idle stream"}
		}
		return nil
	}
	st.send += inc
	if st.send > maxWindow {
		c.resetLocked(st, http2.ErrCodeFlowControl, "stream window overflow")
		return c.queuedControlLocked()
	}
	c.wakeSendersLocked()
	return nil
}

func (c *conn) wakeSendersLocked() {
	if c.sendWaiters > 0 {
		c.cond.Broadcast()
	}
}

func (c *conn) onReset(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID > c.lastID {
		return connError{http2.ErrCodeProtocol, "rst_stream on idle stream"}
	}
	if st := c.streams[f.StreamID]; st != nil {
		c.removeLocked(st, errStreamGone)
	}
	return nil
}

// streamError answers a stream error with RST_STREAM. A stream id the
// client had not used before counts as used: only HEADERS open streams,
// and a stream error on an unused id comes from HEADERS.
func (c *conn) streamError(id uint32, code http2.ErrCode, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id%2 == 1 && id > c.lastID {
		c.lastID = id
	}
	if st := c.streams[id]; st != nil {
		c.resetLocked(st, code, kind)
		return
	}
	c.writeResetLocked(id, code, kind)
}

// writeResetLocked queues RST_STREAM for id and remembers the reset.
func (c *conn) writeResetLocked(id uint32, code http2.ErrCode, kind string) {
	if code != http2.ErrCodeNo {
		c.srv.countError("stream_" + code.String() + "_" + kind)
	}
	_ = c.wfr.WriteRSTStream(id, code)
	if c.resets == nil {
		c.resets = make([]uint32, min(2*int(c.srv.maxStreams()), maxResetRing))
	}
	c.resets[c.resetNext] = id
	c.resetNext = (c.resetNext + 1) % len(c.resets)
	c.kick()
}

// resetByServer reports whether the server reset stream id lately; mu is
// held.
func (c *conn) resetByServer(id uint32) bool {
	for _, r := range c.resets {
		if r == id {
			return true
		}
	}
	return false
}

// goAway starts the connection's graceful end: GOAWAY with the last
// stream the client opened, and the close once the streams have ended.
func (c *conn) goAway(code http2.ErrCode, debug string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goingAway || c.dead {
		return
	}
	c.goingAway = true
	_ = c.wfr.WriteGoAway(c.lastID, code, []byte(debug))
	c.kick()
	c.closeIfDoneLocked()
}

// closeIfDoneLocked ends a going-away connection without streams: the
// reader's read fails at once, and finish closes.
func (c *conn) closeIfDoneLocked() {
	if c.goingAway && len(c.streams) == 0 {
		_ = c.nc.SetReadDeadline(time.Now())
	}
}

// finish ends the connection: a GOAWAY for a connection error, the
// streams reset, the queued frames written, and the close.
func (c *conn) finish(err error) {
	var ce connError
	isConnErr := errors.As(err, &ce)
	c.mu.Lock()
	if isConnErr && !c.dead {
		c.srv.countError("conn_" + ce.code.String())
		_ = c.wfr.WriteGoAway(c.lastID, ce.code, []byte(ce.reason))
	}
	for _, st := range c.streams {
		c.removeLocked(st, errConnGone)
	}
	if c.idle != nil {
		c.idle.Stop()
	}
	if c.pinger != nil {
		c.pinger.Stop()
	}
	c.final = true
	c.mu.Unlock()
	c.kick()
	c.cancel()
	if isConnErr {
		_ = c.nc.SetReadDeadline(time.Now().Add(closeLinger))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(closeLinger))
	<-c.done
	_ = c.nc.Close()
}

// writeLoop writes the queued frames, as many as have queued, with one
// write each time, until the connection is final and nothing is left.
// Woken, it first yields to the goroutines ready to run: handlers that a
// round or a read woke together then queue their responses before the
// write rather than each after its own: a system call costs far more than
// a yield (docs/BENCHMARKS.md, "HTTP/2 serving cost", has the pairs).
func (c *conn) writeLoop() {
	defer close(c.done)
	var buf []byte
	for range c.kickc {
		runtime.Gosched()
		c.mu.Lock()
		buf, c.out = c.out, buf[:0]
		final := c.final
		c.mu.Unlock()
		var err error
		if len(buf) > 0 {
			_, err = c.nc.Write(buf)
		}
		if cap(buf) > keptBuffer {
			buf = nil
		}
		c.mu.Lock()
		if err != nil {
			c.dead = true
			_ = c.nc.SetReadDeadline(time.Now()) // the reader ends too
		}
		c.wakeSendersLocked()
		stop := c.dead || final && len(c.out) == 0
		if !stop && len(c.out) > 0 {
			c.kick()
		}
		c.dead = c.dead || stop
		c.mu.Unlock()
		if stop {
			return
		}
	}
}
