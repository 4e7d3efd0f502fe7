package front

import (
	"encoding/binary"
	"errors"
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
//
// Only resets of streams the server had not yet answered count: those
// cost it work for nothing. A client resets an answered stream when the
// answer came before the end of its request body (Go's client then sends
// RST_STREAM NO_ERROR, as RFC 9113 §8.1 allows), which every refusal that
// does not read the body causes, 503 overloaded among them: counting
// those would close a good client's connection, and all its streams, for
// being refused.

// HTTP/2 frame types and error code the watch needs (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	flagEndStream     = 0x1
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

	streamsMu sync.Mutex // the reader's and the writer's
	streams   map[uint32]streamEnds
}

// streamEnds is which sides have ended a stream that is not yet closed.
type streamEnds struct{ client, server bool }

func newResetWatch(c net.Conn, g *guard) *resetWatch {
	perSec := float64(g.limits.MaxStreams)
	return &resetWatch{
		Conn: c, g: g,
		resets:  rate.NewLimiter(rate.Limit(perSec), 4*int(g.limits.MaxStreams)),
		in:      frameSplitter{skip: clientPrefaceLen},
		streams: make(map[uint32]streamEnds),
	}
}

func (w *resetWatch) Read(p []byte) (int, error) {
	if w.calm.Load() {
		return 0, errRapidReset
	}
	n, err := w.Conn.Read(p)
	tripped := false
	w.in.split(p[:n], func(typ, flags byte, stream uint32) {
		switch typ {
		case frameHeaders:
			w.lastID = max(w.lastID, stream)
			w.clientEnds(stream, true, flags&flagEndStream != 0)
		case frameData:
			if flags&flagEndStream != 0 {
				w.clientEnds(stream, false, true)
			}
		case frameRSTStream:
			if w.unanswered(stream) {
				tripped = tripped || !w.resets.AllowN(time.Now(), 1)
			}
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
	end := w.out.split(p, func(typ, flags byte, stream uint32) {
		switch {
		case typ == frameRSTStream:
			w.serverEnds(stream, true)
		case (typ == frameHeaders || typ == frameData) && flags&flagEndStream != 0:
			w.serverEnds(stream, false)
		}
	})
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

// clientEnds notes a client's frame on stream: HEADERS open it (and
// may end the client's side, as ends says), DATA with END_STREAM end it.
func (w *resetWatch) clientEnds(stream uint32, opens, ends bool) {
	w.streamsMu.Lock()
	defer w.streamsMu.Unlock()
	e, ok := w.streams[stream]
	if !ok && !opens {
		return
	}
	e.client = e.client || ends
	w.keep(stream, e)
}

// serverEnds notes that the server ended stream: with END_STREAM, or
// with RST_STREAM (reset), which closes it on both sides.
func (w *resetWatch) serverEnds(stream uint32, reset bool) {
	w.streamsMu.Lock()
	defer w.streamsMu.Unlock()
	e, ok := w.streams[stream]
	if !ok {
		return
	}
	e.server, e.client = true, e.client || reset
	w.keep(stream, e)
}

// keep stores e, or forgets a stream both sides have ended.
func (w *resetWatch) keep(stream uint32, e streamEnds) {
	if e.client && e.server {
		delete(w.streams, stream)
		return
	}
	w.streams[stream] = e
}

// unanswered reports whether the client resets a stream it opened and
// the server has not ended, and forgets the stream.
func (w *resetWatch) unanswered(stream uint32) bool {
	w.streamsMu.Lock()
	defer w.streamsMu.Unlock()
	e, ok := w.streams[stream]
	delete(w.streams, stream)
	return ok && !e.server
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
		lingerClose(w.Conn)
		_ = w.Conn.Close()
	}()
	return nil
}

// How long, and for how many bytes, a connection given its last answer is
// read before it is closed (lingerClose).
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

// split feeds p and calls f with each complete frame header's type,
// flags and stream id. It returns where in p the last frame that p completes ends
// (0 if p starts on a boundary and completes none), or -1 if p neither
// starts nor ends on a boundary.
func (s *frameSplitter) split(p []byte, f func(typ, flags byte, stream uint32)) int {
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
		f(s.hdr[3], s.hdr[4], binary.BigEndian.Uint32(s.hdr[5:])&0x7fffffff)
		if s.skip == 0 {
			end = i
		}
	}
	return end
}

func (s *frameSplitter) atBoundary() bool { return s.skip == 0 && s.have == 0 }
