package front

import (
	"net"
	"sync"
)

// readBuf gives net/http's HTTP/2 frame reader, which reads each frame's
// header and then its payload straight from the connection, what one read
// of the socket brings: a system call per batch of frames rather than two
// per frame. Its buffer is pooled and held only while it holds bytes not
// yet given out. A read as large as the buffer (grpc-go's reader) goes to
// the connection directly. A/B pairs with ticket-master's client show it
// cheaper in server CPU than net/http's reads alone.
type readBuf struct {
	buf      *[]byte
	pos, end int
	err      error // the error of the read that brought buf's bytes, given after them
}

const readBufSize = 16 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// read reads into p from what is buffered, or else from c.
func (r *readBuf) read(c net.Conn, p []byte) (int, error) {
	if r.pos == r.end {
		if err := r.err; err != nil {
			r.err = nil
			return 0, err
		}
		if len(p) >= readBufSize {
			return c.Read(p)
		}
		if r.buf == nil {
			r.buf = readBufs.Get().(*[]byte)
		}
		n, err := c.Read(*r.buf)
		r.pos, r.end = 0, n
		if n == 0 {
			r.drop()
			return 0, err
		}
		r.err = err
	}
	n := copy(p, (*r.buf)[r.pos:r.end])
	r.pos += n
	if r.pos == r.end {
		r.drop()
	}
	return n, nil
}

// drop gives the buffer back once it holds nothing.
func (r *readBuf) drop() {
	if r.buf != nil {
		readBufs.Put(r.buf)
		r.buf = nil
	}
	r.pos, r.end = 0, 0
}
