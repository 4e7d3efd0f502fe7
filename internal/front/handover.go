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
		done := newCloseNotify(c)
		s.slowQ.put(&replayConn{Conn: done, head: replay})
		<-done.done
	})
	return true
}

// closeNotify is a hijacked connection that reports its Close on done once
// no Read is in flight. fasthttp recycles the hijacked connection and its
// reader as soon as the hijack handler returns, and net/http closes a
// connection while its background read may still be reading it; so Close
// closes the socket under it, which ends that read, and waits for it.
type closeNotify struct {
	net.Conn              // fasthttp's hijacked connection
	raw      net.Conn     // the socket under it
	mu       sync.RWMutex // held shared by each Read, exclusively by Close
	closed   bool
	done     chan struct{}
	once     sync.Once
}

func newCloseNotify(c net.Conn) *closeNotify {
	raw := c
	if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
		raw = u.UnsafeConn()
	}
	return &closeNotify{Conn: c, raw: raw, done: make(chan struct{})}
}

func (c *closeNotify) Read(p []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *closeNotify) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		err = c.raw.Close()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
	})
	return err
}
