package front

import (
	"bufio"
	"bytes"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// A keep-alive connection that fasthttp serves can carry, after its first
// request, the request of a stream: a browser's gRPC-Web server stream or
// the dashboard's events, on the connection that fetched the page.
// fasthttpadaptor sends a response's headers only with its first body
// bytes, so a stream that flushes its headers and waits for its first
// message holds them until that message comes. handOver therefore moves
// such a connection to net/http, which serves it from that request on, as
// it would have had the stream come first.

// handOver moves ctx's connection to net/http if ctx's request is one that
// net/http serves (a path under Options.SlowPrefixes), replaying the
// request, whose body the router has read. It reports whether it did.
func (s *Server) handOver(ctx *fasthttp.RequestCtx) bool {
	if !s.isSlow(ctx.Method(), ctx.Path()) {
		return false
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if ctx.Request.Write(w) != nil || w.Flush() != nil {
		return false
	}
	replay := b.Bytes()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		// fasthttp closes c once this returns: wait for net/http to end
		// the connection first.
		done := &closeNotify{Conn: c, done: make(chan struct{})}
		s.slowQ.put(&replayConn{Conn: done, head: replay})
		<-done.done
	})
	return true
}

// closeNotify is a connection that reports its Close on done.
type closeNotify struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *closeNotify) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
