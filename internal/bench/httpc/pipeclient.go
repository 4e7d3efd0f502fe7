package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Pipelining (HTTPOptions.Pipeline): several VUs share one connection of
// the fast client and send their requests without waiting for the replies
// to the requests before them (HTTP/1.1 pipelining, RFC 9112 §9.3.2); the
// server answers in order.
//
// Why: on a small machine a request's system calls, not its handler, are
// most of what it costs. One at a time, each request is a write and a read
// on each side; an empty route costs the server less than half as much
// CPU a request sixteen deep (docs/BENCHMARKS.md, "Figures behind the
// code"). A shared connection carries whatever its VUs queued
// since its last write in one write, which the server reads in one read
// and answers in one write. The server still sees every request, in full;
// what changes is how many of them a system call carries, as behind a
// proxy that gathers many users onto few connections.
//
// Each connection has a writer goroutine, which sends what the VUs queued
// since its last write, and a reader goroutine, which parses the replies
// and hands each to the VU whose request is oldest. A VU's goroutine waits
// for its own reply. Replies come in order, so one slow reply (a long poll)
// holds up the ones behind it on its connection.
//
// A failed connection fails every request on it. None is resent, since the
// server may have acted on it; the next request dials a new connection.
//
// It is kept beside fasthttp's PipelineClient (--http-client fasthttp with
// --pipeline) because the library costs the load generator more CPU per
// request, in every A/B pair (docs/BENCHMARKS.md, "Figures behind the
// code"; docs/bench/client-ab-pipeline-*.json).

var errServerClosing = errors.New("the server closed the pipelined connection")

// pipeConn is one connection slot that Pipeline Endpoints share. It dials
// a new session when the last one failed or went stale.
type pipeConn struct {
	t  *fastTransport
	mu sync.Mutex
	// cur is the session requests go to; nil before the first request.
	cur    *pipeSession
	closed bool
}

// pipeCall is one Endpoint's request in flight. An Endpoint has at most
// one, so it keeps and reuses its pipeCall, reply buffer included.
type pipeCall struct {
	done     chan struct{} // receives once the reply or the failure is in
	isHEAD   bool          // a HEAD request: its reply has no content
	deadline time.Time     // when the whole exchange must be over
	status   int
	retry    time.Duration // the reply's Retry-After
	reply    []byte
	err      error
}

// pipeSession is one TCP connection of a pipeConn and its two goroutines.
type pipeSession struct {
	t     *fastTransport
	tc    *net.TCPConn
	br    *bufio.Reader
	wire  *wireCount
	wake  chan struct{} // the writer has requests to send
	ready chan struct{} // the reader has a reply to wait for

	mu       sync.Mutex
	out      []byte      // requests queued and not yet written
	spare    []byte      // the writer's previous buffer, for out to reuse
	queue    []*pipeCall // calls waiting for their replies, oldest at head
	head     int
	lastUsed time.Time
	err      error // why the session ended; nil while it works
}

// session returns the session to send on at now, dialling one if needed.
func (p *pipeConn) session(ctx context.Context, now time.Time) (*pipeSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClientClosed
	}
	if s := p.cur; s != nil {
		if s.usable(now) {
			return s, nil
		}
		s.fail(errServerClosing)
	}
	s, err := p.dial(ctx, now)
	if err != nil {
		return nil, err
	}
	p.cur = s
	return s, nil
}

func (p *pipeConn) dial(ctx context.Context, now time.Time) (*pipeSession, error) {
	d := p.t.dialer
	d.Deadline = now.Add(p.t.timeout)
	nc, err := d.DialContext(ctx, "tcp", p.t.addr)
	if err != nil {
		return nil, err
	}
	s := &pipeSession{
		t:        p.t,
		tc:       nc.(*net.TCPConn), // what a "tcp" dial returns
		wire:     p.t.wire.newCount(),
		wake:     make(chan struct{}, 1),
		ready:    make(chan struct{}, 1),
		lastUsed: now,
	}
	s.br = bufio.NewReaderSize(s, fastBufferSize)
	go s.write()
	go s.read()
	return s, nil
}

// close fails the current session for good: the client is closing.
func (p *pipeConn) close() {
	p.mu.Lock()
	p.closed = true
	s := p.cur
	p.mu.Unlock()
	if s != nil {
		s.fail(errClientClosed)
	}
}

// usable reports whether the session can take a request: it has not
// failed and, if it sat idle, the server has not closed it meanwhile
// (finding out before writing is what makes a new dial safe).
func (s *pipeSession) usable(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	idle := s.head == len(s.queue) && len(s.out) == 0
	return !idle || now.Sub(s.lastUsed) < s.t.idleProbe || peerOpen(s.tc)
}

// enqueue queues e's request for c: its bytes for the writer, c for the
// reader.
func (s *pipeSession) enqueue(e *fastEndpoint, c *pipeCall, method string, uri, body []byte, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if len(s.out) == 0 {
		signal(s.wake)
	}
	s.out = append(e.appendHead(s.out, method, uri, body), body...)
	if s.head == len(s.queue) {
		signal(s.ready)
	}
	s.queue = append(s.queue, c)
	s.lastUsed = now
	return nil
}

// signal wakes ch's goroutine unless a wake-up is already pending.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// write sends what the VUs queued, as one write each time it wakes.
func (s *pipeSession) write() {
	for range s.wake {
		s.mu.Lock()
		buf := s.out
		s.out, s.spare = s.spare[:0], nil
		s.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		_ = s.tc.SetWriteDeadline(time.Now().Add(s.t.timeout))
		n, err := s.tc.Write(buf)
		s.wire.sent.Add(int64(n))
		if err != nil {
			s.fail(fmt.Errorf("writing the request: %w", err))
			return
		}
		s.mu.Lock()
		s.spare = buf[:0]
		s.mu.Unlock()
	}
}

// read hands each reply to the oldest call waiting.
func (s *pipeSession) read() {
	for {
		c := s.next()
		if c == nil {
			return
		}
		// The oldest call's deadline bounds the wait: the replies queued
		// behind it are due after it.
		_ = s.tc.SetReadDeadline(c.deadline)
		r, reply, err := readResponse(s.br, c.isHEAD, c.reply)
		c.reply, c.status, c.retry = reply, r.status, r.retryAfter
		switch {
		case err != nil:
			c.err = fmt.Errorf("reading the reply: %w", err)
			s.fail(c.err)
		case !r.keepAlive:
			// This reply is whole; the requests behind it will not
			// be answered on this connection.
			s.fail(errServerClosing)
		}
		last := c.err != nil || !r.keepAlive
		c.done <- struct{}{} // c is its VU's again from here
		if last {
			return
		}
	}
}

// next takes the oldest call from the queue, waiting for one; nil once the
// session has failed.
func (s *pipeSession) next() *pipeCall {
	for {
		s.mu.Lock()
		if s.err != nil {
			s.mu.Unlock()
			return nil
		}
		if s.head < len(s.queue) {
			c := s.queue[s.head]
			s.queue[s.head] = nil
			if s.head++; s.head == len(s.queue) {
				s.queue, s.head = s.queue[:0], 0
			}
			s.mu.Unlock()
			return c
		}
		s.mu.Unlock()
		<-s.ready
	}
}

// fail ends the session with err: it closes the connection and fails
// every call still queued. The call the reader holds, if any, fails in
// the reader, whose read the close interrupts.
func (s *pipeSession) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	queued := s.queue[s.head:]
	s.queue, s.head = nil, 0
	// Under mu, as every signal is sent: no send can follow the close.
	close(s.wake)
	close(s.ready)
	s.mu.Unlock()
	_ = s.tc.Close()
	for _, c := range queued {
		c.err = err
		c.done <- struct{}{}
	}
}

// Read counts what the reader takes from the socket.
func (s *pipeSession) Read(p []byte) (int, error) {
	n, err := s.tc.Read(p)
	s.wire.received.Add(int64(n))
	return n, err
}

// pipeSend is fastEndpoint.send on a shared connection.
func (e *fastEndpoint) pipeSend(method string, uri, body []byte) (int, []byte, error) {
	now := time.Now()
	c := &e.call
	if c.done == nil {
		c.done = make(chan struct{}, 1)
	}
	c.isHEAD, c.deadline, c.err = method == "HEAD", now.Add(e.t.timeout), nil
	if err := e.ctx.Err(); err != nil {
		return 0, nil, err
	}
	s, err := e.pipe.session(e.ctx, now)
	if err != nil {
		return 0, nil, e.failed(err)
	}
	if err := s.enqueue(e, c, method, uri, body, now); err != nil {
		return 0, nil, e.failed(err)
	}
	select {
	case <-c.done:
	case <-e.ctx.Done():
		// The reply cannot be skipped on a shared connection, so the
		// connection goes; the wait below is for the reader or fail to
		// let go of c.
		s.fail(e.ctx.Err())
		<-c.done
	}
	if c.err != nil {
		return 0, nil, e.failed(c.err)
	}
	e.retry = c.retry
	return c.status, c.reply, nil
}
