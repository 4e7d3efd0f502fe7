package front

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Rapid reset (CVE-2023-44487): a client opens a stream and resets it at
// once, over and over. Each stream costs the server a handler's start
// while the client's cost ends with two frames. Neither server here ends
// such a connection: net/http sends GOAWAY only when handlers queue up
// behind MaxConcurrentStreams, which fast handlers never do, and grpc-go
// (v1.85) only bounds its handlers. So the front watches the frames
// itself.
//
// A client that cancels in good faith cancels streams it waited for:
// with at most Limits.MaxStreams open at once and each waited on for a
// second or more, it resets at most MaxStreams a second. resetWatch
// allows that rate with a burst of four times as many; past it the
// connection gets a GOAWAY (ENHANCE_YOUR_CALM) and is closed.

// HTTP/2 frame types and error code the watch needs (RFC 9113).
const (
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameGoAway       = 0x7
	errEnhanceYourCal = 0xb
	frameHeaderLen    = 9
	clientPrefaceLen  = 24
)

var errRapidReset = errors.New("front: too many streams reset by the client; GOAWAY sent")

// resetWatch is an HTTP/2 connection whose client's RST_STREAM frames
// are counted against a rate. It sees the bytes the server reads (from
// the preface on) and writes, and splits both into frames by their
// headers alone.
type resetWatch struct {
	net.Conn
	g      *guard
	resets *rate.Limiter
	in     frameSplitter // read by the server's reader only
	lastID uint32        // the client's highest stream id, for GOAWAY
	mu     sync.Mutex    // guards out, and orders writes with Close's GOAWAY
	out    frameSplitter
	held   []byte      // the start of a frame the server has not finished writing
	calm   atomic.Bool // tripped: reads fail and Close sends GOAWAY
}

func newResetWatch(c net.Conn, g *guard) *resetWatch {
	perSec := float64(g.limits.MaxStreams)
	return &resetWatch{
		Conn: c, g: g,
		resets: rate.NewLimiter(rate.Limit(perSec), 4*int(g.limits.MaxStreams)),
		in:     frameSplitter{skip: clientPrefaceLen},
	}
}

func (w *resetWatch) Read(p []byte) (int, error) {
	if w.calm.Load() {
		return 0, errRapidReset
	}
	n, err := w.Conn.Read(p)
	tripped := false
	w.in.split(p[:n], func(typ byte, stream uint32) {
		switch typ {
		case frameHeaders:
			w.lastID = max(w.lastID, stream)
		case frameRSTStream:
			tripped = tripped || !w.resets.AllowN(time.Now(), 1)
		}
	})
	if tripped && !w.calm.Swap(true) {
		w.g.reject(reasonRapidReset)
	}
	return n, err
}

// Write sends the complete frames of what the server wrote, holding a
// frame's start back until its end comes, so that a GOAWAY can follow
// whatever was sent. Servers write whole frames before they wait, so the
// hold lasts until the server's next write.
func (w *resetWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := w.out.split(p, func(byte, uint32) {})
	if end < 0 {
		w.held = append(w.held, p...)
		return len(p), nil
	}
	out := p[:end]
	if len(w.held) > 0 {
		out = append(w.held, out...)
	}
	if _, err := w.Conn.Write(out); err != nil {
		return 0, err
	}
	w.held = append(w.held[:0], p[end:]...)
	return len(p), nil
}

// Close sends a tripped connection's GOAWAY, if the server's last write
// ended on a frame boundary, then closes.
func (w *resetWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.calm.Load() || len(w.held) > 0 {
		return w.Conn.Close()
	}
	_ = w.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = w.Conn.Write(goAway(w.lastID, errEnhanceYourCal, "too_many_resets"))
	// Closing a socket with unread input resets it, and a reset can
	// destroy the GOAWAY before the client reads it: read on, discarding,
	// for a while first, off the server's goroutine.
	go func() {
		_ = w.Conn.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, w.Conn, lingerBytes)
		_ = w.Conn.Close()
	}()
	return nil
}

// How long, and for how many bytes, a connection told GOAWAY is read
// before it is closed.
const (
	lingerTime  = 5 * time.Second
	lingerBytes = 4 << 20
)

// goAway is a GOAWAY frame.
func goAway(lastStream, code uint32, debug string) []byte {
	b := make([]byte, frameHeaderLen, frameHeaderLen+8+len(debug))
	n := 8 + len(debug)
	b[0], b[1], b[2], b[3] = byte(n>>16), byte(n>>8), byte(n), frameGoAway
	b = binary.BigEndian.AppendUint32(b, lastStream&0x7fffffff)
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, debug...)
}

// frameSplitter finds frame headers in a byte stream fed in pieces.
type frameSplitter struct {
	skip int // bytes before the next frame header: a payload, or the preface
	hdr  [frameHeaderLen]byte
	have int // bytes of hdr read
}

// split feeds p and calls f with each complete frame header's type and
// stream id. It returns where in p the last frame that p completes ends
// (0 if p starts on a boundary and completes none), or -1 if p neither
// starts nor ends on a boundary.
func (s *frameSplitter) split(p []byte, f func(typ byte, stream uint32)) int {
	end, i := -1, 0
	if s.atBoundary() {
		end = 0
	}
	for i < len(p) {
		if s.skip > 0 {
			k := min(s.skip, len(p)-i)
			s.skip -= k
			i += k
			if s.atBoundary() {
				end = i
			}
			continue
		}
		k := copy(s.hdr[s.have:], p[i:])
		s.have += k
		i += k
		if s.have < frameHeaderLen {
			break
		}
		s.have = 0
		s.skip = int(s.hdr[0])<<16 | int(s.hdr[1])<<8 | int(s.hdr[2])
		f(s.hdr[3], binary.BigEndian.Uint32(s.hdr[5:])&0x7fffffff)
		if s.skip == 0 {
			end = i
		}
	}
	return end
}

func (s *frameSplitter) atBoundary() bool { return s.skip == 0 && s.have == 0 }
