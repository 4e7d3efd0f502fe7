package front

import (
	"bufio"
	"bytes"
	"net"
	"sync"
	"time"

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
		raw := c
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			raw = u.UnsafeConn()
		}
		// net/http gets the connection itself, not fasthttp's wrapper, which
		// fasthttp recycles once this returns; and fasthttp closes raw then,
		// so this waits for net/http to end the connection first.
		done := &closeNotify{Conn: raw, done: make(chan struct{})}
		s.slowQ.put(&replayConn{Conn: done, head: append(replay, buffered(c, raw)...)})
		<-done.done
	})
	return true
}

// buffered takes what fasthttp read of raw past the request: reads of c
// give it before they read raw, which a deadline in the past then stops.
func buffered(c, raw net.Conn) []byte {
	if c == raw || raw.SetReadDeadline(time.Unix(1, 0)) != nil {
		return nil
	}
	defer func() { _ = raw.SetReadDeadline(time.Time{}) }()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil || n == 0 {
			return out
		}
	}
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
