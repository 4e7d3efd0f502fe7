package httpc

import (
	"context"
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// FastHTTPClient is fasthttp's HostClient, the library beside the fast
// client: kept to measure one against the other (A/B pairs on the same
// server, the load generator's CPU per request).
const FastHTTPClient ClientKind = "fasthttp"

// leanEndpoint is an Endpoint of a client that sends on the VU's own
// goroutine: the fast client's or fasthttp's.
type leanEndpoint interface {
	body() []byte
	send(method string, uri, body []byte) (int, []byte, error)
	defaultMethod() string
	close()
	retryAfter() time.Duration
}

func (e *fastEndpoint) defaultMethod() string { return e.method }

// fhDoer is what an fhEndpoint sends with: fasthttp's HostClient, or its
// PipelineClient when Endpoints pipeline.
type fhDoer interface {
	DoTimeout(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error
}

// newFastHTTPClient is fasthttp's HostClient for base with conns
// connections, or with pipeline above 1 its PipelineClient with that many
// requests in flight on each of conns/pipeline connections; counted on the
// wire as the other clients are.
func newFastHTTPClient(base *url.URL, conns, pipeline int, timeout time.Duration, wire *wireCounters) fhDoer {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	dial := func(addr string) (net.Conn, error) {
		conn, err := dialer.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return wire.wrap(conn), nil
	}
	if pipeline > 1 {
		return &fasthttp.PipelineClient{
			Addr:                          base.Host,
			MaxConns:                      (conns + pipeline - 1) / pipeline,
			MaxPendingRequests:            pipeline,
			Dial:                          dial,
			ReadBufferSize:                fastBufferSize,
			WriteBufferSize:               fastBufferSize,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
		}
	}
	return &fasthttp.HostClient{
		Addr:                          base.Host,
		MaxConns:                      conns,
		Dial:                          dial,
		ReadTimeout:                   timeout,
		WriteTimeout:                  timeout,
		ReadBufferSize:                fastBufferSize,
		WriteBufferSize:               fastBufferSize,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
	}
}

// fhEndpoint sends through fasthttp, reusing its request and response.
type fhEndpoint struct {
	hc      fhDoer
	ctx     context.Context
	timeout time.Duration
	method  string
	uri     string // the Endpoint's own request-URI
	base    string // the target's path, before a SendURI's
	req     fasthttp.Request
	resp    fasthttp.Response
	buf     []byte
	uriBuf  []byte
}

func newFHEndpoint(c *targetClient, ctx context.Context, method, requestURI string) *fhEndpoint {
	e := &fhEndpoint{hc: c.fh, ctx: ctx, timeout: c.timeout, method: method, uri: requestURI, base: c.base.EscapedPath()}
	e.req.Header.SetHost(c.base.Host)
	for k, vs := range c.header {
		for _, v := range vs {
			e.req.Header.Set(k, v)
		}
	}
	return e
}

func (e *fhEndpoint) body() []byte          { return e.buf[:0] }
func (e *fhEndpoint) defaultMethod() string { return e.method }
func (e *fhEndpoint) close()                {}

func (e *fhEndpoint) retryAfter() time.Duration {
	return parseRetryAfter(e.resp.Header.Peek(fasthttp.HeaderRetryAfter))
}

func (e *fhEndpoint) send(method string, uri, body []byte) (int, []byte, error) {
	if err := e.ctx.Err(); err != nil {
		return 0, nil, err
	}
	e.req.Header.SetMethod(method)
	if uri == nil {
		e.req.SetRequestURI(e.uri)
	} else {
		e.uriBuf = append(append(e.uriBuf[:0], e.base...), uri...)
		e.req.SetRequestURIBytes(e.uriBuf)
	}
	// A request keeps the last one's Content-Length unless told: a GET
	// after a PUT would announce the PUT's body.
	e.req.SetBodyRaw(body)
	e.req.Header.SetContentLength(len(body))
	e.buf = body
	if err := e.hc.DoTimeout(&e.req, &e.resp, e.timeout); err != nil {
		return 0, nil, err
	}
	return e.resp.StatusCode(), e.resp.Body(), nil
}
