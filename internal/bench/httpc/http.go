package httpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// ClientKind selects the HTTP client a load generator sends with.
type ClientKind string

const (
	// FastClient is the lean HTTP/1.1 client of fastclient.go: a
	// connection per Endpoint, driven by the Endpoint's own goroutine.
	// It is the default (also for an empty ClientKind).
	FastClient ClientKind = "fast"
	// StdClient is net/http's Transport, for comparison and for https.
	StdClient ClientKind = "std"
)

// Validate reports a kind this package does not know.
func (k ClientKind) Validate() error {
	switch k {
	case "", FastClient, StdClient, H2CClient, H2FastClient, FastHTTPClient:
		return nil
	}
	return fmt.Errorf("bench: --http-client must be %s, %s, %s, %s or %s, not %q", FastClient, StdClient, FastHTTPClient, H2FastClient, H2CClient, string(k))
}

// OrDefault returns k, or FastClient if k is empty.
func (k ClientKind) OrDefault() ClientKind {
	if k == "" {
		return FastClient
	}
	return k
}

// HTTPOptions configures an HTTPClient.
type HTTPOptions struct {
	// Client selects the client; empty means FastClient.
	Client ClientKind
	// Target is the server's base URL, such as http://127.0.0.1:8080, or
	// several, comma-separated, that the connections are spread over.
	Target string
	// APIKey, if set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Conns is how many connections to keep open, in all: the number of
	// VUs.
	Conns int
	// Timeout bounds a request: the wait for the reply's headers with
	// StdClient, the whole exchange with FastClient (0: 30 s).
	Timeout time.Duration
	// TLS configures https:// targets (StdClient and H2CClient); nil: the
	// system's authorities (SSL_CERT_FILE names others).
	TLS *tls.Config
	// Pipeline, above 1, has that many Endpoints share each connection
	// and pipeline their requests on it (pipeclient.go); FastClient only.
	// 0 or 1: each Endpoint has a connection of its own.
	Pipeline int
}

// targetClient sends a load generator's requests to one target:
// keep-alive connections, one per VU, and a count of the bytes that cross
// them.
type targetClient struct {
	base    *url.URL
	rt      *http.Transport  // StdClient
	fast    *fastTransport   // FastClient
	h2      *h2Pool          // H2CClient
	h2f     *h2FastTransport // H2FastClient
	fh      fhDoer           // FastHTTPClient
	timeout time.Duration
	header  http.Header // shared by every request; never modified after construction
	wire    wireCounters
}

// newTargetClient returns a client for target alone.
func newTargetClient(o HTTPOptions, target string) (*targetClient, error) {
	base, err := url.Parse(strings.TrimRight(target, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("bench: target %q is not an http(s) URL", target)
	}
	if err := o.Client.Validate(); err != nil {
		return nil, err
	}
	if o.Pipeline > 1 && o.Client.OrDefault() != FastClient && o.Client != FastHTTPClient {
		return nil, errors.New("bench: --pipeline needs --http-client fast or fasthttp")
	}
	if !isFieldValue([]byte(o.APIKey)) {
		return nil, errors.New("bench: the API key holds characters a header cannot")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	conns := max(o.Conns, 1)
	c := &targetClient{base: base, header: http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json"},
		"User-Agent":   {"surge-bench"},
	}}
	if o.APIKey != "" {
		c.header.Set("Authorization", "Bearer "+o.APIKey)
	}
	if o.Client.OrDefault() == FastClient {
		if c.fast, err = newFastTransport(base, o.APIKey, conns, o.Pipeline, timeout, &c.wire); err != nil {
			return nil, err
		}
		return c, nil
	}
	c.timeout = timeout
	if o.Client == FastHTTPClient {
		c.fh = newFastHTTPClient(base, conns, o.Pipeline, timeout, &c.wire)
		return c, nil
	}
	if o.Client == H2FastClient {
		if c.h2f, err = newH2FastTransport(base, o.APIKey, conns, timeout, &c.wire, newH2Log()); err != nil {
			return nil, err
		}
		return c, nil
	}
	if o.Client == H2CClient {
		var tc *tls.Config
		if base.Scheme == "https" {
			tc = o.TLS.Clone()
			if tc == nil {
				tc = &tls.Config{}
			}
		}
		c.h2 = newH2Pool(conns, &c.wire, tc)
		return c, nil
	}
	c.rt = c.stdTransport(o, conns, timeout)
	return c, nil
}

// stdTransport is net/http's transport for StdClient: conns connections
// at most, each request counted on c's wire.
func (c *targetClient) stdTransport(o HTTPOptions, conns int, timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil, // a load generator talks to its target directly
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return c.wire.wrap(conn), nil
		},
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		TLSHandshakeTimeout:   10 * time.Second,
		TLSClientConfig:       o.TLS.Clone(),
		// The server's replies are small JSON; gzip would only cost CPU on
		// both sides of a shared machine.
		DisableCompression: true,
		ReadBufferSize:     16 << 10,
		WriteBufferSize:    16 << 10,
	}
}

// Target returns the base URL requests go to.
func (c *targetClient) Target() string { return c.base.String() }

// BytesSent is the number of bytes written to the server so far.
func (c *targetClient) BytesSent() int64 {
	return c.wire.total(func(w *wireCount) int64 { return w.sent.Load() })
}

// BytesReceived is the number of bytes read from the server so far.
func (c *targetClient) BytesReceived() int64 {
	return c.wire.total(func(w *wireCount) int64 { return w.received.Load() })
}

// Close closes the connections (see HTTPClient.Close).
func (c *targetClient) Close() {
	switch {
	case c.fast != nil:
		c.fast.close()
	case c.fh != nil:
		// fasthttp's PipelineClient has no way to close its connections:
		// they end with the process.
		if hc, ok := c.fh.(*fasthttp.HostClient); ok {
			hc.CloseIdleConnections()
		}
	case c.h2 != nil:
		c.h2.close()
	case c.h2f != nil:
		c.h2f.close()
	default:
		c.rt.CloseIdleConnections()
	}
}

// H2Events is what the server did to the connections so far, or nil
// unless the client speaks HTTP/2 (H2CClient, H2FastClient).
func (c *targetClient) H2Events() *H2Events {
	var e H2Events
	switch {
	case c.h2 != nil:
		e = c.h2.snapshot()
	case c.h2f != nil:
		e = c.h2f.log.snapshot()
	default:
		return nil
	}
	return &e
}

// Endpoint returns a handle for method requests to path on this target
// (see HTTPClient.Endpoint).
func (c *targetClient) Endpoint(ctx context.Context, method, path string) *Endpoint {
	u := *c.base
	path, u.RawQuery, _ = strings.Cut(path, "?")
	u.Path += path
	if c.fast != nil {
		return &Endpoint{fast: newFastEndpoint(c.fast, ctx, method, u.RequestURI(), c.base.EscapedPath())}
	}
	if c.fh != nil {
		return &Endpoint{fast: newFHEndpoint(c, ctx, method, u.RequestURI())}
	}
	if c.h2f != nil {
		return &Endpoint{fast: newH2FastEndpoint(c.h2f, ctx, method, u.RequestURI(), c.base.EscapedPath())}
	}
	req := (&http.Request{
		Method:     method,
		URL:        &u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     c.header,
		Host:       u.Host,
	}).WithContext(ctx)
	var rt http.RoundTripper = c.rt
	if c.h2 != nil {
		rt = c.h2.transport()
	}
	return &Endpoint{rt: rt, tmpl: req, path: path}
}

// Do sends one request with body (nil for none) and returns the status and
// the whole reply. It allocates; use it for setup, not on the hot path.
func (c *HTTPClient) Do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	e := c.Endpoint(ctx, method, path)
	defer e.Close()
	status, reply, err := e.Send(body)
	return status, bytes.Clone(reply), err
}

// Endpoint sends requests to one URL from one goroutine, reusing its body
// and reply buffers from request to request.
type Endpoint struct {
	fast leanEndpoint // FastClient's or FastHTTPClient's; the fields below are StdClient's

	rt    http.RoundTripper
	tmpl  *http.Request
	path  string // the path Endpoint was made with, after the base
	buf   []byte // the last body, reusable if reuse is set
	reuse bool
	reply []byte
	retry time.Duration // the last reply's Retry-After
}

// RetryAfter is the delay the last reply asked for in its Retry-After
// field, in seconds (0: none, or a date).
func (e *Endpoint) RetryAfter() time.Duration {
	if e.fast != nil {
		return e.fast.retryAfter()
	}
	return e.retry
}

// Body returns an empty buffer to build the next request body in. Pass the
// result of appending to it to Send.
func (e *Endpoint) Body() []byte {
	if e.fast != nil {
		return e.fast.body()
	}
	if !e.reuse {
		return make([]byte, 0, cap(e.buf))
	}
	return e.buf[:0]
}

// Send sends one request with body and returns the status and the reply,
// which stays valid until the next Send. Going straight to the Transport
// skips http.Client's redirect and timeout machinery, which a load
// generator does not need and would pay for on every request.
func (e *Endpoint) Send(body []byte) (status int, reply []byte, err error) {
	if e.fast != nil {
		return e.fast.send(e.fast.defaultMethod(), nil, body)
	}
	return e.roundTrip(e.tmpl, body)
}

// SendURI is Send with another method and request-URI (path and query,
// already escaped, after the target's base path) on the same connection:
// what a VU that sends to many keys, with several methods, needs.
func (e *Endpoint) SendURI(method string, uri, body []byte) (status int, reply []byte, err error) {
	if e.fast != nil {
		return e.fast.send(method, uri, body)
	}
	path, query, _ := strings.Cut(string(uri), "?")
	req := e.tmpl.Clone(e.tmpl.Context())
	req.Method = method
	req.URL.Path, req.URL.RawPath, req.URL.RawQuery = strings.TrimSuffix(req.URL.Path, e.path)+path, "", query
	return e.roundTrip(req, body)
}

// roundTrip sends a copy of tmpl with body through the std client.
func (e *Endpoint) roundTrip(tmpl *http.Request, body []byte) (status int, reply []byte, err error) {
	req := new(http.Request)
	*req = *tmpl
	if body != nil {
		// A *bytes.Reader (bare or in a NopCloser) is a body the
		// transport knows to be in memory: it then sends headers and body
		// in one write instead of flushing the headers first, which halves
		// the write system calls and the packets the server must read.
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	e.buf, e.reuse = body, false
	resp, err := e.rt.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	e.retry = parseRetryAfter([]byte(resp.Header.Get("Retry-After")))
	e.reply, err = readInto(resp.Body, e.reply[:0])
	resp.Body.Close()
	if err != nil {
		return 0, nil, err
	}
	// The body's buffer may be reused once the transport is done writing
	// it. It is when the server accepted the request (it had to read the
	// whole body for that) on a connection that stays open: then the
	// transport waits for the write to finish before it reports the end
	// of the reply that readInto just saw. After an error reply or on a
	// closing connection the write may still be under way, so the buffer
	// is left to the transport and the next body gets a new one.
	e.reuse = resp.StatusCode/100 == 2 && !resp.Close
	return resp.StatusCode, e.reply, nil
}

// Close releases the Endpoint's connection for another Endpoint to use.
// An Endpoint that is never closed keeps its connection until the
// HTTPClient is closed.
func (e *Endpoint) Close() {
	if e.fast != nil {
		e.fast.close()
	}
	// The net/http Transport pools connections itself, per request.
}

// readInto appends everything r yields to buf, growing it as needed.
func readInto(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// wireCounters tallies bytes per connection: each connection has its own
// counters, so the readers and writers of different connections never
// share a cache line; totals are summed on demand.
type wireCounters struct {
	mu    sync.Mutex
	conns []*wireCount
}

// wireCount is one connection's counts. The padding gives it a cache line
// of its own: counters of different connections, allocated one after the
// other, would otherwise share one, and every count would take the line
// from the core counting for the other connection.
type wireCount struct {
	sent, received atomic.Int64
	_              [48]byte
}

func (w *wireCounters) newCount() *wireCount {
	wc := &wireCount{}
	w.mu.Lock()
	w.conns = append(w.conns, wc)
	w.mu.Unlock()
	return wc
}

func (w *wireCounters) wrap(conn net.Conn) net.Conn {
	return &countingConn{Conn: conn, n: w.newCount()}
}

func (w *wireCounters) total(get func(*wireCount) int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum int64
	for _, wc := range w.conns {
		sum += get(wc)
	}
	return sum
}

type countingConn struct {
	net.Conn
	n *wireCount
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.received.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.sent.Add(int64(n))
	return n, err
}

// ErrorKey names a transport error for the failure breakdown, such as
// "error connection_refused".
func ErrorKey(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "error timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "error connection_refused"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "error connection_reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "error eof"
	case errors.Is(err, context.Canceled):
		return "error canceled"
	}
	return "error other"
}

// StatusKey names a non-2xx reply for the failure breakdown: the status
// and the problem's code when the reply is an RFC 9457 problem, such as
// "422 insufficient_funds".
func StatusKey(status int, reply []byte) string {
	if code, ok := JSONString(reply, "code"); ok && code != "" {
		return fmt.Sprintf("%d %s", status, code)
	}
	return fmt.Sprintf("%d", status)
}

// ProblemDetail returns the problem's detail, or the start of the reply.
func ProblemDetail(reply []byte) string {
	if d, ok := JSONString(reply, "detail"); ok {
		return d
	}
	const maxLen = 200
	if len(reply) > maxLen {
		reply = reply[:maxLen]
	}
	return string(reply)
}

// JSONString finds the first "key": "value" pair in a JSON text and returns
// value with the common escapes undone. It is a scanner for the flat
// objects the server replies with, not a JSON parser: a match inside a
// string value is impossible because quotes there are escaped.
func JSONString(doc []byte, key string) (string, bool) {
	i := indexKey(doc, key)
	if i < 0 || i >= len(doc) || doc[i] != '"' {
		return "", false
	}
	var sb strings.Builder
	for j := i + 1; j < len(doc); j++ {
		switch ch := doc[j]; ch {
		case '"':
			return sb.String(), true
		case '\\':
			if j+1 < len(doc) {
				j++
				sb.WriteByte(doc[j])
			}
		default:
			sb.WriteByte(ch)
		}
	}
	return "", false
}

// indexKey returns the offset of the value after `"key":` (past any
// spaces), or -1.
func indexKey(doc []byte, key string) int {
	pat := make([]byte, 0, len(key)+3)
	pat = append(append(append(pat, '"'), key...), '"')
	from := 0
	for {
		i := bytes.Index(doc[from:], pat)
		if i < 0 {
			return -1
		}
		j := skipSpaces(doc, from+i+len(pat))
		if j < len(doc) && doc[j] == ':' {
			return skipSpaces(doc, j+1)
		}
		from += i + len(pat)
	}
}

func skipSpaces(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}
