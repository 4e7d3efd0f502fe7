package front

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
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
// connection gets a GOAWAY (ENHANCE_YOUR_CALM) and is closed. The resets
// a client makes the server send count too (MadeYouReset, CVE-2025-8671:
// a frame that is a stream error, such as a WINDOW_UPDATE of 0, ends the
// stream as a RST_STREAM would, at the server's initiative).
//
// Only resets that cost the server work for nothing count: the client's
// of streams the server had not yet answered, and the server's with an
// error code. A client resets an answered stream when the answer came
// before the end of its request body (Go's client then sends RST_STREAM
// NO_ERROR, as RFC 9113 §8.1 allows, and a server that answered without
// reading the body sends one too), which every refusal that does not read
// the body causes, 503 overloaded among them: counting those would close
// a good client's connection, and all its streams, for being refused.
//
// grpc-go (v1.85) also lets a client grow the connection's flow-control
// window past 2³¹−1; the watch keeps that window (the client's
// WINDOW_UPDATEs less the server's DATA) and answers such a client with
// GOAWAY FLOW_CONTROL_ERROR (RFC 9113 §6.9.1), as net/http does.

// HTTP/2 frame types and error codes the watch needs (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	flagEndStream     = 0x1
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	errNoError        = 0x0
	errProtocol       = 0x1
	errFlowControl    = 0x3
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
	rb     readBuf       // the server's reader's too, on a connection not gated
	gr     gatedReader   // and on one gated
	lastID uint32        // the client's highest stream id, for GOAWAY
	mu     sync.Mutex    // guards out, and orders writes with Close's GOAWAY
	out    frameSplitter
	held   []byte      // the start of a frame the server has not finished writing
	calm   atomic.Bool // tripped: reads fail and Close sends GOAWAY
	code   atomic.Uint32
	// window is the connection's send window as the client grants it:
	// its WINDOW_UPDATEs less the server's DATA.
	window atomic.Int64

	streamsMu sync.Mutex // the reader's and the writer's
	streams   map[uint32]streamEnds
	// away is set once the server has sent GOAWAY, and last is the last
	// stream it names: the server serves none past it.
	away bool
	last uint32
	// answered holds the streams the server has ended with END_STREAM
	// that streams does not show yet: the writer only notes them, and
	// the reader, which alone asks, applies them before it does (a map's
	// work, on net/http's writer goroutines, grows their fresh stacks).
	answered []uint32
	// gate, on a connection not gRPC's, keeps new streams from the server
	// while it has no room for them (h2gate.go); pending holds the ids,
	// in order, of the streams the server has been given that count
	// pending at the gate (release); waiting holds the connection's
	// requests that wait for a place, up to maxConnWaiting (h2ticket.wait).
	gate    *h2gate
	pending []uint32
	waiting budget
	closed  atomic.Bool
	// peer is the client's address, for every stream's admission.
	peer netip.Addr
}

// streamEnds is which sides have ended a stream that is not yet closed.
type streamEnds struct{ client, server bool }

func newResetWatch(c net.Conn, g *guard) *resetWatch {
	perSec := float64(g.limits.MaxStreams)
	w := &resetWatch{
		Conn: c, g: g, peer: addrOf(c.RemoteAddr()),
		resets:  rate.NewLimiter(rate.Limit(perSec), 4*int(g.limits.MaxStreams)),
		in:      frameSplitter{skip: clientPrefaceLen},
		streams: make(map[uint32]streamEnds),
		waiting: budget{limit: maxConnWaiting},
	}
	w.window.Store(initialWindow)
	return w
}

func (w *resetWatch) Read(p []byte) (int, error) {
	if w.calm.Load() {
		return 0, errRapidReset
	}
	var n int
	var err error
	if w.gate != nil {
		n, err = w.gr.read(w, p)
	} else {
		n, err = w.rb.read(w.Conn, p)
	}
	w.in.split(p[:n], w.observe)
	return n, err
}

// observe notes a frame the server reads.
func (w *resetWatch) observe(h frameHead) {
	switch h.typ {
	case frameHeaders:
		w.lastID = max(w.lastID, h.stream)
		w.clientEnds(h.stream, true, h.flags&flagEndStream != 0)
	case frameData:
		if h.flags&flagEndStream != 0 {
			w.clientEnds(h.stream, false, true)
		}
	case frameRSTStream:
		if w.clientResets(h.stream) {
			w.countReset()
		}
	case frameWindowUpdate:
		if h.stream == 0 && w.window.Add(int64(h.word)) > maxWindow {
			w.trip(errFlowControl, reasonFlowControl)
		}
	}
}

// NetConn is the watched connection, for what asks for its TLS state.
func (w *resetWatch) NetConn() net.Conn { return w.Conn }

// gated makes w park its client's new streams while the server has no
// room for their requests (h2gate.go, h2park.go).
func (w *resetWatch) gated() *resetWatch {
	if w.g.gate.gated() {
		w.gate = w.g.gate
		w.gr.pass = clientPrefaceLen
		w.gr.wake.L = &w.gate.mu
	}
	return w
}

// release ends the pending of stream id, if it has not ended yet. Each
// of these ends it, whichever comes first: admission's decision on its
// request (h2ticket), the stream's end by either side (the server's
// answer with END_STREAM or its RST_STREAM, the client's RST_STREAM),
// and the connection's close. So a stream ends its pending once, whether
// or not the front's handler ever sees it: a server answers some streams
// itself (431 for a header list past its bound, net/http's 400 for a
// connection-specific field) or refuses them with RST_STREAM, and
// net/http runs no handler for a stream reset while its handler waits to
// start.
func (w *resetWatch) release(id uint32) {
	w.streamsMu.Lock()
	ended := w.releaseLocked(id)
	w.streamsMu.Unlock()
	w.decided(ended)
}

// releaseLocked ends stream id's pending, if it has not ended, and
// reports whether it did; streamsMu is held.
func (w *resetWatch) releaseLocked(id uint32) bool {
	i, found := slices.BinarySearch(w.pending, id)
	if found {
		w.pending = slices.Delete(w.pending, i, i+1)
	}
	return found
}

// decided tells the gate that a stream's pending ended, if it did.
func (w *resetWatch) decided(ended bool) {
	if ended {
		w.gate.decided(1)
	}
}

// releaseAll ends the pending of every stream of the connection.
func (w *resetWatch) releaseAll() {
	w.streamsMu.Lock()
	w.releaseAfterAndUnlock(0)
}

// releaseAfterAndUnlock, called with streamsMu held, ends the pending of
// the streams past last and unlocks streamsMu before it tells the gate:
// the gate's lock is never taken under streamsMu.
func (w *resetWatch) releaseAfterAndUnlock(last uint32) {
	i, _ := slices.BinarySearch(w.pending, last+1)
	n := len(w.pending) - i
	w.pending = w.pending[:i]
	w.streamsMu.Unlock()
	if n > 0 {
		w.gate.decided(int64(n))
	}
}

// goneAway notes the server's GOAWAY naming last as the last stream it
// serves: it ignores the streams past it (RFC 9113 §6.8), whose pending
// ends now, and counts none the client opens after.
func (w *resetWatch) goneAway(last uint32) {
	w.streamsMu.Lock()
	if !w.away || last < w.last {
		w.away, w.last = true, last
	}
	w.releaseAfterAndUnlock(w.last)
}

// countReset counts a stream reset, the client's or one the client made
// the server send, against the rate; past it the connection is tripped.
func (w *resetWatch) countReset() {
	if !w.resets.AllowN(time.Now(), 1) {
		w.trip(errEnhanceYourCal, reasonRapidReset)
	}
}

// trip makes the connection's reads fail, and its Close send a GOAWAY
// with code, once.
func (w *resetWatch) trip(code uint32, reason string) {
	if w.calm.Swap(true) {
		return
	}
	w.code.Store(code)
	w.g.reject(reason)
}

// Write sends the complete frames of what the server wrote, holding a
// frame's start back until its end comes, so that a GOAWAY can follow
// whatever was sent. Servers write whole frames before they wait, so the
// hold lasts until the server's next write.
func (w *resetWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := w.out.split(p, func(h frameHead) {
		switch h.typ {
		case frameData:
			w.window.Add(-int64(h.length))
			if h.flags&flagEndStream != 0 {
				w.answer(h.stream)
			}
		case frameHeaders:
			if h.flags&flagEndStream != 0 {
				w.answer(h.stream)
			}
		case frameGoAway:
			w.goneAway(h.word)
		case frameRSTStream:
			w.serverResets(h.stream)
			if h.word != errNoError { // a reset the client made the server send
				w.countReset()
			}
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
	w.applyAnsweredLocked()
	e, ok := w.streams[stream]
	if !ok && !opens {
		return
	}
	e.client = e.client || ends
	w.keep(stream, e)
}

// answer notes that the server ended stream with END_STREAM, for the
// reader (applyAnsweredLocked), and ends its pending.
func (w *resetWatch) answer(stream uint32) {
	w.streamsMu.Lock()
	w.answered = append(w.answered, stream)
	ended := w.releaseLocked(stream)
	w.streamsMu.Unlock()
	w.decided(ended)
}

// applyAnsweredLocked ends the server's side of the streams answered
// since it last ran; streamsMu is held.
func (w *resetWatch) applyAnsweredLocked() {
	for _, id := range w.answered {
		w.serverEndsLocked(id, false)
	}
	w.answered = w.answered[:0]
}

// serverResets notes that the server reset stream, which closes it on
// both sides, and ends its pending.
func (w *resetWatch) serverResets(stream uint32) {
	w.streamsMu.Lock()
	w.serverEndsLocked(stream, true)
	ended := w.releaseLocked(stream)
	w.streamsMu.Unlock()
	w.decided(ended)
}

func (w *resetWatch) serverEndsLocked(stream uint32, reset bool) {
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

// clientResets notes the client's reset of stream: it forgets the
// stream, ends its pending, and reports whether the client opened it and
// the server had not ended it.
func (w *resetWatch) clientResets(stream uint32) (unanswered bool) {
	w.streamsMu.Lock()
	w.applyAnsweredLocked()
	e, ok := w.streams[stream]
	delete(w.streams, stream)
	ended := w.releaseLocked(stream)
	w.streamsMu.Unlock()
	w.decided(ended)
	return ok && !e.server
}

// Close sends a tripped connection's GOAWAY, if the server's last write
// ended on a frame boundary, then closes.
func (w *resetWatch) Close() error {
	if w.gate != nil && !w.closed.Swap(true) {
		w.gr.unlist(w.gate)
		w.gate.leave(&w.gr.wake)
	}
	w.releaseAll()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.calm.Load() {
		return w.Conn.Close()
	}
	if len(w.held) == 0 {
		debug := "too_many_resets"
		if w.code.Load() == errFlowControl {
			debug = "window_overflow"
		}
		_ = w.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = w.Conn.Write(goAway(w.lastID, w.code.Load(), debug))
	}
	// Closing a socket with unread input resets it, and a reset can
	// destroy what the client has not read yet: read on, discarding, for
	// a while first, off the server's goroutine. The server's reader may
	// still be inside a read of the replay, so the linger reads the socket.
	go func() {
		lingerClose(w.socket())
		_ = w.Conn.Close()
	}()
	return nil
}

// socket is the connection under the replayed opening, if there is one.
func (w *resetWatch) socket() net.Conn {
	if r, ok := w.Conn.(interface{ socket() net.Conn }); ok {
		return r.socket()
	}
	return w.Conn
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

// frameHead is a frame's header, and for a WINDOW_UPDATE, a RST_STREAM
// or a GOAWAY the 31- or 32-bit word its payload starts with: the
// increment, the error code, or the last stream.
type frameHead struct {
	typ    byte
	flags  byte
	stream uint32
	length int
	word   uint32
}

// headOf is the frame header b starts with.
func headOf(b []byte) frameHead {
	return frameHead{typ: b[3], flags: b[4], stream: binary.BigEndian.Uint32(b[5:]) & 0x7fffffff,
		length: int(b[0])<<16 | int(b[1])<<8 | int(b[2])}
}

// frameSplitter finds frame headers in a byte stream fed in pieces.
type frameSplitter struct {
	skip int // bytes before the next frame header: a payload, or the preface
	hdr  [frameHeaderLen]byte
	have int // bytes of hdr read
	// A WINDOW_UPDATE's, RST_STREAM's or GOAWAY's header waits here while
	// its word is read (waiting), got bytes of it so far.
	pending frameHead
	waiting bool
	got     int
}

// split feeds p and calls f with each complete frame's header (a
// WINDOW_UPDATE's, RST_STREAM's or GOAWAY's once its word is read). It
// returns where in p the last frame that p completes ends (0 if p starts
// on a boundary and completes none), or -1 if p neither starts nor ends
// on a boundary.
func (s *frameSplitter) split(p []byte, f func(frameHead)) int {
	end, i := -1, 0
	if s.atBoundary() {
		end = 0
	}
	for i < len(p) {
		if s.skip > 0 {
			k := min(s.skip, len(p)-i)
			s.readWord(p[i:i+k], f)
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
		h := headOf(s.hdr[:])
		s.skip = h.length
		if (h.typ == frameWindowUpdate || h.typ == frameRSTStream) && h.length == 4 || h.typ == frameGoAway && h.length >= 8 {
			s.pending, s.waiting, s.got = h, true, 0
		} else {
			f(h)
		}
		if s.skip == 0 {
			end = i
		}
	}
	return end
}

// readWord reads what of a pending frame's word b holds, and calls f
// once it is whole.
func (s *frameSplitter) readWord(b []byte, f func(frameHead)) {
	if !s.waiting {
		return
	}
	for _, c := range b[:min(len(b), 4-s.got)] {
		s.pending.word = s.pending.word<<8 | uint32(c)
		s.got++
	}
	if s.got == 4 {
		h := s.pending
		if h.typ != frameRSTStream {
			h.word &= 0x7fffffff // the reserved bit
		}
		s.waiting = false
		f(h)
	}
}

func (s *frameSplitter) atBoundary() bool { return s.skip == 0 && s.have == 0 }
