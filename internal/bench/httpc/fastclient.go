package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The fast client is a lean HTTP/1.1 client for the closed loop. net/http's
// Transport is general: a connection pool shared by any number of
// goroutines, a reader and a writer goroutine per connection, request and
// response objects, header maps. On the load generator each of those is
// CPU taken from the server under test on the same machine (dozens of
// allocations a request). A VU needs far less: it has exactly one
// request in flight, always to the same URL, with the same headers. So:
//
//   - A VU's Endpoint owns one connection for its whole life. The VU's
//     goroutine writes the request and reads the reply itself: no
//     hand-off to other goroutines, no locks on the way.
//   - The request line and fixed headers are formatted once per Endpoint;
//     a request is that prefix, Content-Length and the body, copied into
//     the connection's bufio.Writer and sent with one write.
//   - The reply is parsed in place from the connection's bufio.Reader
//     (fastparse.go) and its content read into a buffer the Endpoint
//     reuses.
//
// What it leaves out, on purpose: TLS, proxies, HTTP/2, compression,
// redirects, pipelining, and retries of requests that may have reached
// the server.
//
// It is kept beside fasthttp's HostClient (FastHTTPClient, a dependency of
// the server already) because the library costs the load generator more
// CPU per request, in every A/B pair at the same rate (docs/BENCHMARKS.md,
// "Figures behind the code"; docs/bench/client-ab-*.json). Both allocate
// nothing per request (TestFastAllocs logs fasthttp's count). Pipelining
// is compared in pipeclient.go.

const (
	fastBufferSize = 16 << 10 // as the net/http client's buffers
	dialTimeout    = 10 * time.Second
	// defaultIdleProbe is how long a connection may sit unused before
	// the next request first checks that the server has not closed it.
	// A closed-loop VU reuses its connection within microseconds and
	// never pays for the check; a connection kept since setup does.
	defaultIdleProbe = time.Second
)

var errClientClosed = errors.New("bench: HTTP client closed")

// fastTransport dials and pools the fast client's connections.
type fastTransport struct {
	addr      string // host:port to dial
	host      string // the Host header's value
	auth      string // "Authorization: Bearer …\r\n", or empty
	timeout   time.Duration
	idleProbe time.Duration
	dialer    net.Dialer
	wire      *wireCounters

	mu      sync.Mutex
	idle    []*fastConn        // connections no Endpoint holds, most recent last
	conns   map[*fastConn]bool // every connection, held or idle, to close them all
	maxIdle int
	closed  bool
	// pipes are the shared connections when Endpoints pipeline (more
	// than one per connection); nextPipe is the one the next Endpoint
	// gets.
	pipes    []*pipeConn
	nextPipe int
}

func newFastTransport(base *url.URL, apiKey string, conns, pipeline int, timeout time.Duration, wire *wireCounters) (*fastTransport, error) {
	if base.Scheme != "http" {
		return nil, fmt.Errorf("bench: the fast HTTP client speaks plain HTTP only; use the std client for %s", base.Redacted())
	}
	t := &fastTransport{
		addr:      hostPort(base),
		host:      base.Host,
		timeout:   timeout,
		idleProbe: defaultIdleProbe,
		dialer:    net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		wire:      wire,
		conns:     map[*fastConn]bool{},
		maxIdle:   conns,
	}
	if pipeline > 1 {
		t.pipes = make([]*pipeConn, (conns+pipeline-1)/pipeline)
		for i := range t.pipes {
			t.pipes[i] = &pipeConn{t: t}
		}
	}
	if apiKey != "" {
		t.auth = "Authorization: Bearer " + apiKey + "\r\n"
	}
	return t, nil
}

// hostPort is the host:port to dial for a plain http:// URL.
func hostPort(base *url.URL) string {
	port := base.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(base.Hostname(), port)
}

// acquire returns an idle connection, or a new unconnected one.
func (t *fastTransport) acquire() (*fastConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errClientClosed
	}
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		return c, nil
	}
	c := &fastConn{t: t, wire: t.wire.newCount()}
	c.br = bufio.NewReaderSize(c, fastBufferSize)
	c.bw = bufio.NewWriterSize(c, fastBufferSize)
	t.conns[c] = true
	return c, nil
}

// pipe returns the shared connection the next Endpoint sends on, nil
// unless Endpoints pipeline. Endpoints are dealt out in turn, so each
// connection carries at most pipeline of the first VUs' Endpoints.
func (t *fastTransport) pipe() *pipeConn {
	if t.pipes == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pipes[t.nextPipe]
	t.nextPipe = (t.nextPipe + 1) % len(t.pipes)
	return p
}

// release takes back a connection an Endpoint no longer uses, to lend it
// to the next, or closes it if the pool is full.
func (t *fastTransport) release(c *fastConn) {
	t.mu.Lock()
	keep := !t.closed && len(t.idle) < t.maxIdle
	if keep {
		t.idle = append(t.idle, c)
	}
	t.mu.Unlock()
	if !keep {
		t.discard(c)
	}
}

// discard closes a connection for good. Its byte counts stay in the
// totals.
func (t *fastTransport) discard(c *fastConn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.drop()
}

func (t *fastTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// close closes every connection, including those Endpoints still hold:
// their next read or write fails.
func (t *fastTransport) close() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*fastConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.conns, t.idle = map[*fastConn]bool{}, nil
	t.mu.Unlock()
	for _, c := range conns {
		c.shut()
	}
	for _, p := range t.pipes {
		p.close()
	}
}

// fastConn is one connection and its buffers. The buffers and counters
// outlive the TCP connection: after the server closes it, the next
// request dials a new one into the same fastConn.
//
// A fastConn is used by one goroutine at a time, its owner: the Endpoint
// holding it. Only the owner replaces tc, always under mu, so the owner
// reads tc without locking; other goroutines (the Endpoint's context
// watch, the client's Close) read it under mu and only call tc's methods,
// which are safe for concurrent use.
type fastConn struct {
	t    *fastTransport
	mu   sync.Mutex
	tc   *net.TCPConn // nil: not connected
	br   *bufio.Reader
	bw   *bufio.Writer
	wire *wireCount
	// lastUsed is when the last request on tc started.
	lastUsed time.Time
	// written counts the bytes the socket accepted since the request
	// began: zero after a failed write means the server cannot have
	// seen any of the request.
	written int
}

// Read and Write sit between the bufio buffers and the socket, counting
// what crosses it.
func (c *fastConn) Read(p []byte) (int, error) {
	n, err := c.tc.Read(p)
	c.wire.received.Add(int64(n))
	return n, err
}

func (c *fastConn) Write(p []byte) (int, error) {
	n, err := c.tc.Write(p)
	c.written += n
	c.wire.sent.Add(int64(n))
	return n, err
}

// connect dials a new connection for a request that started at now. The
// dial counts against the request's timeout. Called by the owner only.
func (c *fastConn) connect(ctx context.Context, now time.Time) error {
	d := c.t.dialer
	d.Deadline = now.Add(c.t.timeout)
	nc, err := d.DialContext(ctx, "tcp", c.t.addr)
	if err != nil {
		return err
	}
	tc := nc.(*net.TCPConn) // what a "tcp" dial returns
	// Go sets TCP_NODELAY on every TCP connection already; say so
	// explicitly because the design depends on it: a request leaves in
	// one segment as soon as it is written, never held back by Nagle
	// waiting for the ACK of the previous request.
	_ = tc.SetNoDelay(true)
	c.mu.Lock()
	c.tc = tc
	c.mu.Unlock()
	// close sets closed before it shuts the connections it knows, so
	// either it saw tc above or this sees closed.
	if c.t.isClosed() {
		c.drop()
		return errClientClosed
	}
	c.br.Reset(c)
	c.bw.Reset(c)
	c.lastUsed = now
	return nil
}

// drop closes the TCP connection and forgets it. Called by the owner only.
func (c *fastConn) drop() {
	c.mu.Lock()
	tc := c.tc
	c.tc = nil
	c.mu.Unlock()
	if tc != nil {
		_ = tc.Close()
	}
}

// shut closes the TCP connection without forgetting it, so that its owner,
// if any, fails on its next read or write and drops it. Any goroutine.
func (c *fastConn) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil {
		_ = c.tc.Close()
	}
}

// abort makes the read or write in progress, if any, fail at once: the
// Endpoint's context ended. Any goroutine.
func (c *fastConn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil {
		_ = c.tc.SetDeadline(time.Unix(1, 0))
	}
}

// fastEndpoint is the fast client's side of an Endpoint.
type fastEndpoint struct {
	t   *fastTransport
	ctx context.Context
	// method and uri make the request line of Send; basePath is the
	// target's path, which SendURI's request-URIs follow.
	method, uri, basePath string
	// withBody is what follows the request-URI up to the value of
	// Content-Length; noBody the same for a request without a body,
	// ending the head.
	withBody, noBody string
	conn             *fastConn
	stopWatch        func() bool // stops the context watch on conn
	// pipe, if not nil, is the connection the Endpoint shares with
	// others (pipelining), and call its request in flight; conn is then
	// unused.
	pipe  *pipeConn
	call  pipeCall
	buf   []byte // the last body, for Body to reuse
	reply []byte
	retry time.Duration // the last reply's Retry-After
}

func (e *fastEndpoint) retryAfter() time.Duration { return e.retry }

func newFastEndpoint(t *fastTransport, ctx context.Context, method, requestURI, basePath string) *fastEndpoint {
	fixed := " HTTP/1.1\r\nHost: " + t.host + "\r\n" + t.auth
	return &fastEndpoint{
		t:        t,
		ctx:      ctx,
		method:   method,
		uri:      requestURI,
		basePath: basePath,
		withBody: fixed + "Content-Type: application/json\r\nContent-Length: ",
		noBody:   fixed + "\r\n",
		pipe:     t.pipe(),
	}
}

// body returns the buffer for the next body. Unlike the net/http path it
// is always the last body's buffer: send has finished writing a request
// before it returns, whatever the outcome, so no one else holds it.
func (e *fastEndpoint) body() []byte { return e.buf[:0] }

// send sends one request and reads its reply. uri, if not nil, is the
// request-URI after the target's path; nil means the Endpoint's own.
func (e *fastEndpoint) send(method string, uri, body []byte) (int, []byte, error) {
	if body != nil {
		e.buf = body
	}
	if e.pipe != nil {
		return e.pipeSend(method, uri, body)
	}
	now := time.Now()
	c, err := e.ready(now)
	if err != nil {
		return 0, nil, e.failed(err)
	}
	for attempt := 0; ; attempt++ {
		// One deadline covers writing the request and reading the whole
		// reply: --timeout is how long a request may take, end to end.
		_ = c.tc.SetDeadline(now.Add(e.t.timeout))
		// Checked after setting the deadline: if the context ends from
		// now on, its watch (abort) sets a past deadline after this one,
		// and the I/O below fails at once instead of waiting it out.
		if err := e.ctx.Err(); err != nil {
			return 0, nil, err
		}
		err := e.write(c, method, uri, body)
		if err == nil {
			break
		}
		unsent := c.written == 0
		c.drop()
		// A write that the socket refused outright (the server reset
		// the connection while it was idle) put no byte of this request
		// on the wire: sending it on a new connection cannot make the
		// server see it twice. Once any byte has left, the request may
		// have been received and acted on, so it is not resent.
		if !unsent || attempt > 0 {
			return 0, nil, e.failed(fmt.Errorf("writing the request: %w", err))
		}
		if err := c.connect(e.ctx, now); err != nil {
			return 0, nil, e.failed(err)
		}
	}
	r, reply, err := readResponse(c.br, method == "HEAD", e.reply)
	e.reply = reply
	if err != nil {
		// The request was written and the reply did not arrive whole:
		// a failure, never a resend (the server may have acted on it).
		c.drop()
		return 0, nil, e.failed(fmt.Errorf("reading the reply: %w", err))
	}
	// Bytes beyond the reply mean the server and this parser disagree
	// on where the reply ended; the connection cannot be trusted.
	if !r.keepAlive || c.br.Buffered() > 0 {
		c.drop()
	}
	e.retry = r.retryAfter
	return r.status, reply, nil
}

// ready returns the Endpoint's connection, connected: taken from the pool
// on first use, redialled if it is closed.
func (e *fastEndpoint) ready(now time.Time) (*fastConn, error) {
	c := e.conn
	if c == nil {
		var err error
		if c, err = e.t.acquire(); err != nil {
			return nil, err
		}
		e.conn = c
		// One watch for the Endpoint's life, not one per request: when
		// the context ends (the user interrupts the run), abort fails
		// whatever I/O is in progress.
		e.stopWatch = context.AfterFunc(e.ctx, c.abort)
	}
	if c.tc != nil && now.Sub(c.lastUsed) >= e.t.idleProbe && !peerOpen(c.tc) {
		// The server closed the connection while it sat unused (an
		// idle timeout). Finding out before writing is what makes
		// redialling safe.
		c.drop()
	}
	if c.tc == nil {
		if err := c.connect(e.ctx, now); err != nil {
			return nil, err
		}
	}
	c.lastUsed = now
	return c, nil
}

// write writes the request into the connection's buffer and flushes it:
// a single write system call unless the body exceeds the buffer.
func (e *fastEndpoint) write(c *fastConn, method string, uri, body []byte) error {
	c.written = 0
	bw := c.bw
	// AvailableBuffer is the free tail of bw's own buffer: the head is
	// formatted in place, with no allocation.
	_, _ = bw.Write(e.appendHead(bw.AvailableBuffer(), method, uri, body))
	_, _ = bw.Write(body)
	// bufio.Writer's errors are sticky: Flush reports any of the above.
	return bw.Flush()
}

// appendHead appends the request line and header section of a request
// with body (nil: none) to b.
func (e *fastEndpoint) appendHead(b []byte, method string, uri, body []byte) []byte {
	b = append(b, method...)
	b = append(b, ' ')
	if uri == nil {
		b = append(b, e.uri...)
	} else {
		b = append(b, e.basePath...)
		b = append(b, uri...)
	}
	if body == nil {
		return append(b, e.noBody...)
	}
	b = append(b, e.withBody...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	return append(b, "\r\n\r\n"...)
}

// failed prefers the context's error once it has ended, so an interrupted
// request reads as cancelled, not as a timeout.
func (e *fastEndpoint) failed(err error) error {
	if cerr := e.ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// close gives the connection back to the pool for another Endpoint.
func (e *fastEndpoint) close() {
	c := e.conn
	if c == nil {
		return
	}
	e.conn = nil
	if !e.stopWatch() {
		// The context ended and its watch has run or is about to: it
		// may yet set a past deadline on whatever this fastConn holds,
		// so it must not be lent on.
		e.t.discard(c)
		return
	}
	e.t.release(c)
}
