package h2

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Server serves HTTP/2 connections (see doc.go). Its fields are read when a
// connection starts and must not change after.
type Server struct {
	// Handler serves every request.
	Handler http.Handler
	// MaxConcurrentStreams bounds a connection's open streams; a stream
	// past it is refused with REFUSED_STREAM. 0 means 250.
	MaxConcurrentStreams uint32
	// MaxHeaderListSize bounds a request's decoded header list (RFC 9113
	// §6.5.2); a larger one is answered 431. 0 means 16 KiB.
	MaxHeaderListSize uint32
	// StreamWindow is the flow-control window of each stream's request
	// body, the body bytes a stream may have unread; ConnWindow the
	// connection's. Neither is below 65,535, the window RFC 9113 starts
	// with; 0 means 65,535 and 1 MiB.
	StreamWindow, ConnWindow uint32
	// MaxReadFrameSize is the largest frame payload read (RFC 9113
	// §4.2); 0 means 16 KiB.
	MaxReadFrameSize uint32
	// PrefaceTimeout bounds reading the client's preface and first
	// SETTINGS; IdleTimeout how long a connection without streams stays
	// open. 0 means no bound.
	PrefaceTimeout, IdleTimeout time.Duration
	// PingAfter, when set, is how long a connection may send nothing
	// before the server sends it a PING; one that then sends nothing for
	// PingTimeout more is closed: a client gone without a word would
	// otherwise hold its parked streams for good.
	PingAfter, PingTimeout time.Duration
	// ConnContext, if set, gives a connection's requests their base
	// context.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// CountError, if set, is called with the kind of each protocol error
	// answered with RST_STREAM or GOAWAY.
	CountError func(kind string)
	// Logger receives handlers' panics; nil means slog.Default().
	Logger *slog.Logger

	// jobs hands streams to idle workers (workers.go).
	jobs     chan *stream
	workers  atomic.Int32
	quit     chan struct{}
	initOnce sync.Once

	mu       sync.Mutex
	conns    map[*conn]struct{}
	closing  bool
	connGone chan struct{} // signalled when a connection ends during Shutdown
}

// Defaults of the zero fields.
const (
	defaultMaxStreams    = 250
	defaultMaxHeaderList = 16 << 10
	defaultStreamWindow  = 65535
	defaultConnWindow    = 1 << 20
	defaultMaxFrameSize  = 16 << 10
	// headerTable is the HPACK dynamic table the decoder keeps (RFC 7541
	// §4.2).
	headerTable = 4096
)

// Settings are the SETTINGS a connection opens with: what the server
// holds its clients to.
func (s *Server) Settings() []http2.Setting {
	return []http2.Setting{
		{ID: http2.SettingMaxConcurrentStreams, Val: s.maxStreams()},
		{ID: http2.SettingInitialWindowSize, Val: s.streamWindow()},
		{ID: http2.SettingMaxFrameSize, Val: s.maxFrameSize()},
		{ID: http2.SettingMaxHeaderListSize, Val: s.maxHeaderList()},
		{ID: http2.SettingHeaderTableSize, Val: headerTable},
	}
}

func (s *Server) maxStreams() uint32    { return or(s.MaxConcurrentStreams, defaultMaxStreams) }
func (s *Server) maxHeaderList() uint32 { return or(s.MaxHeaderListSize, defaultMaxHeaderList) }
func (s *Server) streamWindow() uint32  { return max(s.StreamWindow, defaultStreamWindow) }
func (s *Server) connWindow() uint32 {
	return max(or(s.ConnWindow, defaultConnWindow), defaultStreamWindow)
}
func (s *Server) maxFrameSize() uint32 { return or(s.MaxReadFrameSize, defaultMaxFrameSize) }

func or(v, def uint32) uint32 {
	if v == 0 {
		return def
	}
	return v
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) countError(kind string) {
	if s.CountError != nil {
		s.CountError(kind)
	}
}

// ServeConn serves c, whose client speaks HTTP/2 from its first byte (the
// preface), until the connection ends; it closes c.
func (s *Server) ServeConn(c net.Conn) {
	cc := newConn(s, c)
	if !s.track(cc) {
		_ = c.Close()
		return
	}
	defer s.untrack(cc)
	cc.serve()
}

// init makes the workers' channels, on the first connection or Shutdown.
func (s *Server) init() {
	s.initOnce.Do(func() { s.jobs, s.quit = make(chan *stream), make(chan struct{}) })
}

func (s *Server) track(c *conn) bool {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.connGone != nil {
		select {
		case s.connGone <- struct{}{}:
		default:
		}
	}
}

// Shutdown sends every connection GOAWAY, lets their streams end, and
// waits until the connections have closed or ctx ends; then it closes
// those left. New connections are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	if !s.closing {
		close(s.quit) // idle workers end; busy ones when their stream does
	}
	s.closing = true
	s.connGone = make(chan struct{}, 1)
	for c := range s.conns {
		c.goAway(http2.ErrCodeNo, "")
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-s.connGone:
		case <-ctx.Done():
			s.mu.Lock()
			for c := range s.conns {
				_ = c.nc.Close()
			}
			s.mu.Unlock()
			return ctx.Err()
		}
	}
}
