// Package front is surge's front door: one listening port, two HTTP
// servers, surge's own HTTP/2 server and a gRPC server behind it.
//
// HTTP/1.1 is served by fasthttp. In a flash crowd every request is small
// and the server's own HTTP work is most of its CPU: answering an empty
// request costs net/http about twice the CPU fasthttp takes
// (docs/BENCHMARKS.md, "Figures behind the code"), since fasthttp reuses its
// request and response objects and parses in place instead of building
// header maps and starting a background reader per request.
//
// HTTP/2 (ticket-master's --http2 client sends its preface; browsers
// choose it over TLS) is served by package h2, surge's own HTTP/2 server,
// or by net/http's with Options.HTTP2 set to HTTP2Net. net/http serves
// the HTTP/1.1 connections fasthttp cannot: the streams of the dashboard
// and of the wallet's gRPC-Web and Connect clients, which must notice a
// client that leaves. Each connection is routed once, by its first
// request: an HTTP/2 connection whose first request is gRPC goes to
// Options.GRPC (see h2open.go); any other HTTP/2 connection to the HTTP/2
// server; a path under one of Options.SlowPrefixes to net/http; anything
// else to fasthttp.
//
// Requests do not all arrive on the server that serves them best, since a
// keep-alive connection can carry any path after its first. The handlers
// therefore reach each other: the fasthttp handler passes paths it has no
// native route for to the net/http handler (fasthttpadaptor), and the
// net/http handler, which the HTTP/2 servers serve too, serves the native
// routes through NetHandler.
package front

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/surge-dev/surge/internal/browser"
	"github.com/surge-dev/surge/internal/front/h2"
)

// Options configure a Server.
type Options struct {
	// Routes are served natively on fasthttp, and through NetHandler when
	// they arrive on net/http.
	Routes []Route
	// Net serves every other request.
	Net http.Handler
	// Middleware wraps every request net/http serves and every request of
	// Net (it should measure them); Wrap wraps the native routes for the
	// requests fasthttp serves. Either may be nil.
	Middleware func(http.Handler) http.Handler
	Wrap       Wrap
	// GRPC, when set, serves the connections whose first request is gRPC
	// over HTTP/2 (see h2open.go); net/http serves them otherwise. Every
	// later request on such a connection goes to GRPC too.
	GRPC GRPCServer
	// OnNetRequest is NetHandler's.
	OnNetRequest OnNetRequest
	// SlowPrefixes send a connection to net/http when its first request's
	// path starts with one ("/" matches only the root): streams, which
	// fasthttp cannot watch for a client that leaves, and the wallet's RPCs.
	SlowPrefixes []string
	// MaxRequestBodyBytes is the largest body fasthttp reads; a handler
	// with a lower limit answers over-limit bodies itself.
	MaxRequestBodyBytes int
	// HeaderTimeout bounds reading a request (fasthttp: with its body);
	// IdleTimeout how long a keep-alive connection waits for the next.
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration
	// Limits bound connections, bodies and streams (see limits.go).
	Limits Limits
	// Admission, when set, holds the budgets of the limits instead of
	// Limits and Registerer: the one the gRPC server's options were made
	// from (Admission.GRPCOptions), so that its calls count too.
	Admission *Admission
	// Authorize reports whether an Authorization header carries the API
	// key; a body for a route that is not Open is read only if it does.
	// Nil admits every request.
	Authorize func(authorization string) bool
	// Registerer receives the limits' metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger receives the servers' own errors; nil means slog.Default().
	Logger *slog.Logger
	// CORS, when not nil, answers the allowed origins' preflights and
	// marks their responses readable, on every route of both servers.
	CORS *browser.CORS
	// HTTP2 chooses the server of the HTTP/2 connections that are not
	// gRPC's: HTTP2Surge (package h2; the zero value too) or HTTP2Net
	// (net/http's).
	HTTP2 HTTP2Server
}

// HTTP2Server names a server for HTTP/2 connections.
type HTTP2Server string

// The HTTP/2 servers: surge's own (package h2) and net/http's.
const (
	HTTP2Surge HTTP2Server = "surge"
	HTTP2Net   HTTP2Server = "net"
)

// Server serves one listener with fasthttp and net/http.
type Server struct {
	opts  Options
	guard *guard
	fast  *fasthttp.Server
	slow  *http.Server
	// h2, when set, serves the HTTP/2 connections that are not gRPC's.
	h2 *h2.Server
	// workers run net/http's requests (workers.go).
	workers *handlerWorkers
	log     *slog.Logger

	mu       sync.Mutex // guards closing and listener
	closing  bool
	listener net.Listener
	// slowQ takes the connections handOver moves to net/http; set by
	// Serve before either server starts.
	slowQ *queue
}

// New returns a Server for opts.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Admission == nil {
		opts.Admission = NewAdmission(opts.Limits, opts.Registerer)
	}
	opts.Limits = opts.Admission.g.limits
	s := &Server{opts: opts, log: log, guard: opts.Admission.g}
	measure := opts.Middleware
	if measure == nil {
		measure = func(h http.Handler) http.Handler { return h }
	}
	router := newRouter(opts.Routes, routerOptions{
		Wrap: opts.Wrap, Fallback: fasthttpadaptor.NewFastHTTPHandler(abortCloses(detach(measure(opts.Net)))),
		MaxBody: int64(opts.MaxRequestBodyBytes), OnNetRequest: opts.OnNetRequest,
		Authorize: opts.Authorize, Guard: s.guard, Logger: log, HandOver: s.handOver, ReadTimeout: opts.HeaderTimeout,
	})
	s.fast = &fasthttp.Server{
		Handler:                      opts.CORS.Fast(router.Handle),
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  opts.HeaderTimeout,
		IdleTimeout:                  opts.IdleTimeout,
		MaxRequestBodySize:           opts.MaxRequestBodyBytes,
		ReadBufferSize:               8 << 10, // headers up to 8 KiB, as a bearer token needs
		// The router admits a body before it is read (admit.go).
		StreamRequestBody: true,
		CloseOnShutdown:   true,
		Logger:            printfLogger{log},
		HeaderReceived:    router.paceFirstBytes,
		ErrorHandler:      router.requestError,
	}
	serve := entering(router.admitNet(measure(opts.CORS.Net(router.Net(opts.Net)))))
	s.workers = onWorkers(serve, handlerWorkerCount)
	s.slow = &http.Server{
		Handler:           s.workers,
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    maxHeaderList,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		HTTP2:             http2Config(opts.Limits, newHTTP2Errors(opts.Registerer)),
		ConnContext:       connContext,
	}
	s.slow.Protocols = new(http.Protocols)
	s.slow.Protocols.SetHTTP1(true)
	s.slow.Protocols.SetUnencryptedHTTP2(true)
	if opts.HTTP2 != HTTP2Net {
		s.h2 = newH2(serve, opts, s.slow.HTTP2.CountError, log) // on its own reused goroutines
	}
	return s
}

// newH2 is surge's own HTTP/2 server of h under opts' budgets, the same
// net/http's is held to (http2Config).
func newH2(h http.Handler, opts Options, countError func(string), log *slog.Logger) *h2.Server {
	return &h2.Server{
		Handler:              h,
		MaxConcurrentStreams: opts.Limits.MaxStreams,
		MaxHeaderListSize:    maxHeaderList,
		StreamWindow:         initialWindow,
		MaxReadFrameSize:     defaultMaxFrameSize,
		PrefaceTimeout:       opts.HeaderTimeout,
		IdleTimeout:          opts.IdleTimeout,
		PingAfter:            time.Minute, // as net/http's SendPingTimeout (http2Config)
		PingTimeout:          15 * time.Second,
		ConnContext:          connContext,
		CountError:           countError,
		Logger:               log,
	}
}

// RegisterOnShutdown runs f when Shutdown starts, as net/http's does:
// endless streams are told to end.
func (s *Server) RegisterOnShutdown(f func()) { s.slow.RegisterOnShutdown(f) }

// Serve accepts connections on ln and routes each to its server. It
// returns http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	qs := queues{fast: newQueue(ln.Addr()), slow: newQueue(ln.Addr())}
	if s.opts.GRPC != nil {
		settings, err := s.openingSettings()
		if err != nil {
			return err
		}
		qs.h2Settings = settings
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.listener = ln
	s.slowQ = qs.slow
	s.mu.Unlock()
	defer qs.fast.Close()
	defer qs.slow.Close()
	go func() { _ = s.fast.Serve(qs.fast) }()
	go func() { _ = s.slow.Serve(qs.slow) }()
	if s.opts.GRPC != nil {
		qs.grpc = newQueue(ln.Addr())
		defer qs.grpc.Close()
		go func() { _ = s.opts.GRPC.Serve(qs.grpc) }()
	}
	backoff := time.Duration(0)
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			// Out of file descriptors and the like: wait and retry, as
			// net/http does, rather than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if c = s.guard.admitConn(c); c != nil {
			go s.route(c, qs)
		}
	}
}

// queues hand routed connections to each server; grpc is nil without
// Options.GRPC, and h2Settings, the SETTINGS frame the front opens HTTP/2
// connections with when it must choose their server (h2open.go), with it.
type queues struct {
	fast, slow, grpc *queue
	h2Settings       []byte
}

// route reads the start of c's first request and hands c to its server.
func (s *Server) route(c net.Conn, qs queues) {
	head, err := firstLine(c, s.opts.HeaderTimeout)
	if len(head) == 0 && err != nil {
		_ = c.Close()
		return
	}
	method, path := requestTarget(head)
	switch {
	case notHTTP(head):
		s.guard.reject(reasonMalformed)
		_ = c.Close()
	case !bytes.Equal(method, preface) && negotiated(c) == "h2":
		// A client that chose h2 by ALPN speaks HTTP/2 from its first
		// byte; any other start is a connection error (RFC 9113 §3.4).
		_, _ = c.Write(goAway(0, errProtocol, "invalid preface"))
		_ = c.Close()
	case bytes.Equal(method, preface) && qs.grpc != nil:
		replay, opening, err := sniffHTTP2(c, head, s.opts.HeaderTimeout, qs.h2Settings)
		switch {
		case err != nil:
			_ = c.Close()
		case opening.isGRPC:
			qs.grpc.put(newResetWatch(newOpenedConn(c, replay, opening), s.guard))
		case s.h2 != nil:
			s.h2.ServeConn(newResetWatch(newOpenedConn(c, replay, opening), s.guard).gated())
		default:
			qs.slow.put(newResetWatch(newOpenedConn(newCoalescedConn(c), replay, opening), s.guard).gated())
		}
	case bytes.Equal(method, preface) && s.h2 != nil:
		s.h2.ServeConn(newResetWatch(&replayConn{Conn: c, head: head}, s.guard).gated())
	case bytes.Equal(method, preface):
		qs.slow.put(newResetWatch(&replayConn{Conn: newCoalescedConn(c), head: head}, s.guard).gated())
	case s.isSlow(method, path):
		qs.slow.put(&replayConn{Conn: c, head: head})
	default:
		qs.fast.put(&ackConn{replayConn: replayConn{Conn: c, head: head}})
	}
}

var preface = []byte("PRI") // HTTP/2's connection preface starts "PRI * HTTP/2.0"

// negotiated is the protocol c's client chose by TLS ALPN, "" on a
// connection without TLS.
func negotiated(c net.Conn) string {
	for {
		switch v := c.(type) {
		case interface{ ConnectionState() tls.ConnectionState }:
			return v.ConnectionState().NegotiatedProtocol
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return ""
		}
	}
}

func (s *Server) isSlow(method, path []byte) bool {
	if bytes.Equal(method, preface) {
		return true
	}
	for _, p := range s.opts.SlowPrefixes {
		if p == "/" && len(path) == 1 || p != "/" && strings.HasPrefix(b2s(path), p) {
			return true
		}
	}
	return false
}

// Shutdown stops accepting, then waits for both servers' requests to end
// or ctx to expire.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	if s.listener != nil {
		_ = s.listener.Close()
	}
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- s.fast.ShutdownWithContext(ctx) }()
	h2Done := make(chan error, 1)
	go func() {
		if s.h2 == nil {
			h2Done <- nil
			return
		}
		h2Done <- s.h2.Shutdown(ctx)
	}()
	grpcDone := make(chan struct{})
	go func() {
		if s.opts.GRPC != nil {
			stopGRPC(ctx, s.opts.GRPC)
		}
		close(grpcDone)
	}()
	err := s.slow.Shutdown(ctx)
	s.workers.stop()
	<-grpcDone
	return errors.Join(err, <-done, <-h2Done)
}

// stopGRPC stops g gracefully, or at once when ctx ends first.
func stopGRPC(ctx context.Context, g GRPCServer) {
	stopped := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		g.Stop()
		<-stopped
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// printfLogger gives fasthttp's errors to slog.
type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn("http: " + fmt.Sprintf(format, args...))
}
