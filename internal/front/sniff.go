package front

import (
	"bytes"
	"net"
	"sync"
	"time"
	"unsafe"
)

// sniffLimit bounds how much of a connection's first request is read to
// choose its server: the method and the start of the path decide.
const sniffLimit = 128

// firstLine reads from c until the first request's method and path are
// known (or sniffLimit bytes, or an error) and returns what it read.
func firstLine(c net.Conn, timeout time.Duration) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	buf := make([]byte, 0, sniffLimit)
	for {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if lineKnown(buf) || len(buf) == cap(buf) || err != nil {
			return buf, err
		}
	}
}

// lineKnown reports whether b holds the method, the path and the space
// after the path (or a line end, or a query's '?').
func lineKnown(b []byte) bool {
	sp := bytes.IndexByte(b, ' ')
	return sp >= 0 && bytes.ContainsAny(b[sp+1:], " ?\r\n")
}

// requestTarget splits a sniffed request line into method and path; either
// may be cut short by sniffLimit.
func requestTarget(b []byte) (method, path []byte) {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return b, nil
	}
	path = b[sp+1:]
	if end := bytes.IndexAny(path, " ?\r\n"); end >= 0 {
		path = path[:end]
	}
	return b[:sp], path
}

// notHTTP reports whether b holds a whole first line that is neither
// HTTP/1's request line nor HTTP/2's preface: its third word does not name
// an HTTP version. Such a client speaks no protocol the port serves, and
// an HTTP/1.1 answer would be noise to it (an HTTP/2 client that sent a
// broken preface reads it as a frame); the connection is closed unanswered
// (RFC 9113 §3.4).
func notHTTP(b []byte) bool {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return false // the line's end is not read: fasthttp judges it
	}
	words := bytes.Fields(b[:end])
	return len(words) == 3 && !bytes.HasPrefix(words[2], []byte("HTTP/"))
}

// replayConn gives back the sniffed bytes before reading on from the
// connection.
type replayConn struct {
	net.Conn
	head []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// NetConn is the connection under the replay, for what asks for its TLS
// state.
func (c *replayConn) NetConn() net.Conn { return c.Conn }

// socket is the connection under the replay: unlike the replay, it may be
// read from two goroutines at once.
func (c *replayConn) socket() net.Conn { return c.Conn }

// queue is a net.Listener whose connections are handed over by the
// sniffer, so that each server accepts only its own.
type queue struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newQueue(addr net.Addr) *queue {
	return &queue{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next connection the sniffer routes here.
func (q *queue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

// put hands c to the queue's server, or closes it if the queue is closed.
func (q *queue) put(c net.Conn) {
	select {
	case q.conns <- c:
	case <-q.closed:
		_ = c.Close()
	}
}

// Close stops Accept; connections already accepted live on.
func (q *queue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

// Addr is the address of the real listener.
func (q *queue) Addr() net.Addr { return q.addr }

// b2s views b as a string without copying; the string must not outlive b
// or see it change.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
