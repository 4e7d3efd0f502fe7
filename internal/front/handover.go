package front

import (
	"bytes"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// A keep-alive connection that fasthttp serves may later carry a request
// for a path of Options.SlowPrefixes: a browser reuses its connections
// across paths, so a page that read /v1 first may then open a chat stream
// on the same connection. fasthttp cannot stream such a reply (its
// adaptor buffers the whole response), so the connection is handed over
// to net/http instead, with that request replayed to it, and stays there.

// handOver serves slow-path requests by handing their connection to
// net/http, and every other request with next.
func (s *Server) handOver(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !s.isSlow(ctx.Method(), ctx.Path()) {
			next(ctx)
			return
		}
		q := s.slowQueue()
		if q == nil {
			next(ctx)
			return
		}
		var raw bytes.Buffer
		if _, err := ctx.Request.WriteTo(&raw); err != nil {
			ctx.Error("malformed request: "+err.Error(), fasthttp.StatusBadRequest)
			return
		}
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) {
			// fasthttp closes c when this returns: wait for net/http
			// to be done with it.
			h := &handedConn{replayConn: replayConn{Conn: c, head: raw.Bytes()}, done: make(chan struct{})}
			q.put(h)
			<-h.done
		})
	}
}

// slowQueue is the queue of net/http's connections while Serve runs.
func (s *Server) slowQueue() *queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slowQ
}

// handedConn is a connection fasthttp handed over: closing it tells
// fasthttp's hijack handler, which closes the connection beneath.
type handedConn struct {
	replayConn
	once sync.Once
	done chan struct{}
}

func (c *handedConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}
