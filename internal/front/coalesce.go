package front

import (
	"net"
	"sync"
	"time"
)

// net/http's HTTP/2 server writes to the connection each time its queue
// of frames runs dry, which under many small concurrent streams is once
// per response: a system call each. coalescedConn takes the server's
// writes into a buffer and hands them to the socket from a goroutine of
// its own, so that what the server writes while one system call is under
// way goes out together in the next. A connection that writes one thing
// at a time pays a goroutine's start per write, as net/http's own
// asynchronous writes do; one that writes more batches them.
// A/B pairs: docs/BENCHMARKS.md, "Server CPU per reservation over HTTP/2".
//
// At most maxCoalesced bytes wait: past it a write waits for the socket,
// so a client that stops reading holds the server back. A write
// error is given to the next write, and Close sends what waits (for at
// most coalesceDrainTime) before it closes.
type coalescedConn struct {
	net.Conn
	mu       sync.Mutex
	drained  sync.Cond // signalled whenever the flusher has written a batch
	buf      []byte    // written by the server, not yet handed to the socket
	flushing bool      // a flusher goroutine is running
	err      error     // the socket's last write error
	closed   bool
}

// maxCoalesced bounds the bytes a connection holds for the socket.
const maxCoalesced = 64 << 10

// coalesceDrainTime bounds how long Close waits for what the server wrote
// to reach a client that does not read.
const coalesceDrainTime = time.Second

// coalesceBufs recycles the buffers of connections between batches, so
// that an idle connection holds none.
var coalesceBufs = sync.Pool{New: func() any { return new([]byte) }}

func newCoalescedConn(c net.Conn) *coalescedConn {
	w := &coalescedConn{Conn: c}
	w.drained.L = &w.mu
	return w
}

// Write queues p for the socket, waiting while maxCoalesced bytes are
// queued already.
func (w *coalescedConn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closed && len(w.buf) >= maxCoalesced {
		w.drained.Wait()
	}
	switch {
	case w.err != nil:
		return 0, w.err
	case w.closed:
		return 0, net.ErrClosed
	}
	if w.buf == nil {
		w.buf = (*coalesceBufs.Get().(*[]byte))[:0]
	}
	w.buf = append(w.buf, p...)
	if !w.flushing {
		w.flushing = true
		go w.flush()
	}
	return len(p), nil
}

// flush writes batches to the socket until none is left.
func (w *coalescedConn) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.buf) > 0 && w.err == nil {
		out := w.buf
		w.buf = nil
		w.mu.Unlock()
		_, err := w.Conn.Write(out)
		out = out[:0]
		coalesceBufs.Put(&out)
		w.mu.Lock()
		if err != nil {
			w.err = err
		}
		w.drained.Broadcast()
	}
	w.flushing = false
	w.drained.Broadcast()
}

// Close sends what is queued, then closes the socket.
func (w *coalescedConn) Close() error {
	w.drain()
	return w.Conn.Close()
}

// CloseWrite sends what is queued, then shuts the socket's writing side,
// if it has one (lingerClose).
func (w *coalescedConn) CloseWrite() error {
	w.drain()
	if cw, ok := w.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// drain refuses further writes and waits until what is queued is written
// or coalesceDrainTime has passed.
func (w *coalescedConn) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.flushing {
		_ = w.Conn.SetWriteDeadline(time.Now().Add(coalesceDrainTime))
	}
	for w.flushing {
		w.drained.Wait()
	}
}
