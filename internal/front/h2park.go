package front

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The gate (h2gate.go) keeps a new stream from the server while the
// server has no room for its request, and the stream counts against
// MaxRequests from its HEADERS on. It cannot stop reading the connection
// there: a client may send the next stream's HEADERS before the body of
// one already let in (Go's client writes a body after its headers), and
// that stream's handler, holding a place, waits for the body. So the
// reader of a gated connection parks the new stream's frames and reads on:
//
//   - Header blocks (HEADERS and CONTINUATION) reach the server in the
//     order they came: HPACK's state is the connection's, and stream ids
//     only grow. Once a new stream is parked, every header block after it
//     is parked too, a stream's trailers among them.
//   - A frame of a stream already let in goes on at once, ahead of the
//     parked ones, unless a frame of its own stream is parked (its
//     trailers); so do the connection's own frames (SETTINGS, PING,
//     WINDOW_UPDATE). Neither depends on the parked streams: a stream's
//     frames keep their order, and the connection's settings and window
//     are the same for a stream opened after them.
//   - Any other frame (one of a parked stream, or of a stream not yet
//     opened) is parked behind what came before it.
//
// When the gate lets the first parked stream in, its frames go on, with
// every header block after it up to the next new stream and every frame
// whose stream is then let in. A parked stream costs nothing but its
// frames' bytes, held here: no stream state, handler or body buffer in
// the server.
//
// A client that keeps to flow control may still fill maxParked: a parked
// frame costs more than its payload, and header blocks are not
// flow-controlled. The reader does not stop reading there, since the
// body of a stream already let in may come after what fills it, and that
// stream's request holds a place the gate waits for. Instead the first
// parked stream goes to the server at once, counted pending as a stream
// whose wait has ended: its request waits for a place in takeWork, on
// its own handler's goroutine, as any request refused by MaxRequests
// does, and is refused once that wait ends. So the work past MaxRequests
// is never done; what a client gains by filling the bound over and over
// is a few handlers waiting for a place, their bodies read within the
// body budget: at most maxConnWaiting of a connection's requests wait
// (h2gate.go), and past them a forced stream's request is refused at
// once, as on a connection not gated. A client that does not keep to
// flow control makes the server end the stream or the connection once
// the stream's frames reach it.
//
// A stream's trailers parked behind a new stream wait with it: a request
// with trailers, sent while the server has no room for the next stream,
// may wait until the gate lets that stream in.

// Bounds of a connection's parked frames.
const (
	// maxParked bounds the bytes a connection's parked frames cost.
	maxParked = 1 << 20
	// parkedFrameCost is what a parked frame costs besides its bytes: its
	// places in the park, the count of its stream's frames and the list
	// of released frames, and its allocation's rounding, so that a flood
	// of empty frames fills the bound too.
	parkedFrameCost = 128
)

// frameContinuation continues a header block (RFC 9113 §6.10).
const frameContinuation = 0x9

// parkedFrame is a whole frame the server has not been given yet.
type parkedFrame struct {
	h frameHead
	b []byte // header and payload
}

// cost is what f counts against maxParked.
func (f parkedFrame) cost() int { return len(f.b) + parkedFrameCost }

// sockRead is the outcome of a read of the connection.
type sockRead struct {
	n   int
	err error
}

// gatedReader is the server's reader's side of a gated connection: it
// splits what it reads into frames and gives the server those that may
// go, parking the rest. All but wake, listed and the read under way are
// the reader's alone.
type gatedReader struct {
	// buf holds what was read and not yet given or parked, [pos, end). It
	// is pooled (readBufs), and held while it holds bytes or a read into
	// it is under way.
	buf      *[]byte
	pos, end int
	err      error // the error of the read that brought buf's bytes, given after them
	// pass is how many bytes of the frame being given to the server, the
	// client's preface first, are still to come.
	pass int
	// admitted is the highest stream the server has been given the
	// HEADERS of.
	admitted uint32

	park        []parkedFrame
	parkedBytes int            // the park's cost
	on          map[uint32]int // parked frames by stream
	// since is when the first parked stream began to wait; seen, the
	// gate's gen when it last found no room, and retryAt when its wait
	// ends unless gen grows first.
	since   time.Time
	seen    uint64
	retryAt time.Time
	// listed says the gate counts the reader among those with parked
	// frames (h2gate.parked): set by the reader, and ended once by the
	// reader when its park empties, or by Close.
	listed atomic.Bool
	// rel holds released frames, whole, given to the server before
	// anything read after them: rel[relNext] from its byte relOff on.
	rel             [][]byte
	relNext, relOff int

	// While frames are parked the reader waits at the gate and reads the
	// connection at once: a read under way, into buf, ends in reads.
	reading bool
	reads   chan sockRead
	// wake is signalled, under the gate's lock, when the read under way
	// ends, the gate may have room, or the connection closes.
	wake sync.Cond
}

// read gives the server what it may read of w: the rest of the frame it
// is reading, released frames, then the next frame that may go.
func (r *gatedReader) read(w *resetWatch, p []byte) (int, error) {
	for {
		switch {
		case r.pass > 0:
			return r.passOn(w.Conn, p)
		case r.relNext < len(r.rel):
			return r.giveReleased(p), nil
		case len(r.park) > 0 && r.releaseDue(w) && r.release(w, false):
			continue
		}
		if err := r.next(w); err != nil {
			return 0, err
		}
	}
}

// next takes the frame that starts at pos, once its header is whole: it
// is to be given to the server (pass), or parked; or, while frames are
// parked, it waits for more of the connection or the gate.
func (r *gatedReader) next(w *resetWatch) error {
	if r.end-r.pos < frameHeaderLen {
		if r.err != nil {
			return r.takeErr()
		}
		if len(r.park) == 0 {
			r.fill(w.Conn)
			return nil
		}
		return r.await(w, r.startRead(w))
	}
	h := headOf((*r.buf)[r.pos:])
	if !r.parks(w, h) {
		r.pass = frameHeaderLen + h.length
		return nil
	}
	if r.parkedBytes+frameHeaderLen+h.length+parkedFrameCost > maxParked {
		w.gate.force()
		r.release(w, true)
		return nil
	}
	return r.parkFrame(w, h)
}

// parks reports whether a frame with header h waits: a new stream's
// HEADERS while the gate has no room, and while frames are parked, those
// that must follow them (see above). A frame longer than the servers'
// largest (defaultMaxFrameSize) is never parked: the server ends the
// connection for it.
func (r *gatedReader) parks(w *resetWatch, h frameHead) bool {
	switch {
	case h.length > defaultMaxFrameSize:
		return false
	case len(r.park) == 0:
		if h.typ == frameHeaders && h.stream > r.admitted {
			if entered, _ := w.gate.tryEnter(time.Time{}); !entered {
				return true
			}
			r.admit(w, h.stream)
		}
		return false
	}
	return headerBlock(h.typ) || h.stream != 0 && (h.stream > r.admitted || r.on[h.stream] > 0)
}

func headerBlock(typ byte) bool { return typ == frameHeaders || typ == frameContinuation }

// admit notes that the server is given stream id's HEADERS, which the
// gate has counted pending; the watch keeps the stream's id until its
// pending ends (resetWatch.release).
func (r *gatedReader) admit(w *resetWatch, id uint32) {
	r.admitted = id
	w.streamsMu.Lock()
	// Close has ended the watch's pending, and a server's GOAWAY that of
	// every stream past its last: the server ignores them.
	counted := !w.closed.Load() && (!w.away || id <= w.last)
	if counted {
		w.pending = append(w.pending, id) // ids only grow: in order
	}
	w.streamsMu.Unlock()
	if !counted {
		w.gate.decided(1)
	}
}

// await waits at the gate for the first parked stream to be let in, and
// releases it then; or for the read under way, which ends in reads, to
// end first, and takes what it brought.
func (r *gatedReader) await(w *resetWatch, reads chan sockRead) error {
	other := func() bool { return w.closed.Load() || len(reads) > 0 }
	if w.gate.enter(&r.wake, r.since, other) {
		r.release(w, true)
		return nil
	}
	select {
	case res := <-reads:
		r.took(res)
		return nil
	default:
		return net.ErrClosed
	}
}

// release gives the server the parked frames that may go once the gate
// lets the first parked stream in (see above); counted says it has. It
// reports whether the stream went.
func (r *gatedReader) release(w *resetWatch, counted bool) bool {
	// The first parked frame is a new stream's HEADERS, which waits since
	// r.since: its wait ends on time even while the reader has other
	// frames to give and does not wait at the gate.
	if !counted {
		seen := w.gate.gen.Load()
		entered, until := w.gate.tryEnter(r.since)
		if !entered {
			r.seen, r.retryAt = seen, until
			return false
		}
	}
	counted = true
	kept := r.park[:0]
	clear(r.on)
	blocked := false
	for _, f := range r.park {
		var let bool
		switch {
		case !blocked && f.h.typ == frameHeaders && f.h.stream > r.admitted:
			if let = counted; !let {
				let, _ = w.gate.tryEnter(time.Time{})
			}
			if counted = false; let {
				r.admit(w, f.h.stream)
			}
			blocked = !let
		case !blocked:
			let = true // as the server would have had it: nothing parked came before
		default:
			let = !headerBlock(f.h.typ) && f.h.stream <= r.admitted && r.on[f.h.stream] == 0
		}
		if let {
			r.rel = append(r.rel, f.b)
			r.parkedBytes -= f.cost()
			continue
		}
		kept = append(kept, f)
		r.on[f.h.stream]++
	}
	clear(r.park[len(kept):])
	r.keep(w.gate, kept, len(r.park))
	r.since = time.Now() // the next parked stream's wait begins
	return true
}

// keep makes kept, what a release left of a park of before frames, the
// park, in lists sized to it (shrunk): a map keeps the buckets of the
// most it has held, so the count by stream is made afresh once the park
// is far smaller.
func (r *gatedReader) keep(g *h2gate, kept []parkedFrame, before int) {
	r.park = shrunk(kept)
	if len(kept) == 0 {
		r.unlist(g)
	}
	if before <= shrinkAbove || before <= 4*len(kept) {
		return
	}
	var on map[uint32]int
	if len(kept) > 0 {
		on = make(map[uint32]int, len(r.on))
		for id, n := range r.on {
			on[id] = n
		}
	}
	r.on = on
}

// shrinkAbove is the capacity up to which a list of parked or released
// frames is kept for reuse whatever it holds (shrunk).
const shrinkAbove = 64

// shrunk is s, or, once its array is large and far larger than it, a copy
// (nil if s is empty): parked frames are what a client chooses to send,
// and a flood of them once parked is not to be held for the connection's
// life, while a small list is kept for the next frames.
func shrunk[E any](s []E) []E {
	switch {
	case cap(s) <= shrinkAbove || cap(s) <= 4*len(s):
		return s
	case len(s) == 0:
		return nil // not s[:0:0], which holds the array
	}
	return slices.Clone(s)
}

// list counts the reader, whose park is no longer empty, among the gate's
// readers with parked frames, unless its connection is closed.
func (r *gatedReader) list(w *resetWatch) {
	w.gate.parked.Add(1) // before listed: the count never falls short of the readers listed
	r.listed.Store(true)
	if w.closed.Load() { // Close may have come before listed
		r.unlist(w.gate)
	}
}

// unlist ends the reader's count among the readers with parked frames,
// once.
func (r *gatedReader) unlist(g *h2gate) {
	if r.listed.CompareAndSwap(true, false) {
		g.parked.Add(-1)
	}
}

// giveReleased gives p what it takes of the released frames.
func (r *gatedReader) giveReleased(p []byte) int {
	f := r.rel[r.relNext]
	n := copy(p, f[r.relOff:])
	if r.relOff += n; r.relOff < len(f) {
		return n
	}
	r.rel[r.relNext] = nil
	r.relNext, r.relOff = r.relNext+1, 0
	if r.relNext == len(r.rel) {
		r.rel, r.relNext = shrunk(r.rel[:0]), 0
	}
	return n
}

// releaseDue reports whether the gate may let the first parked stream in
// now that it would not before: room may have come, or its wait ended.
// Asking only then keeps a busy reader off the gate's lock.
func (r *gatedReader) releaseDue(w *resetWatch) bool {
	return w.gate.gen.Load() != r.seen || !time.Now().Before(r.retryAt)
}

// parkFrame reads the frame with header h whole, from pos on, into the
// park.
func (r *gatedReader) parkFrame(w *resetWatch, h frameHead) error {
	c := w.Conn
	f := parkedFrame{h: h, b: make([]byte, 0, frameHeaderLen+h.length)}
	for len(f.b) < cap(f.b) {
		if r.pos == r.end {
			if r.err != nil {
				return r.takeErr()
			}
			r.fill(c)
			continue
		}
		k := min(cap(f.b)-len(f.b), r.end-r.pos)
		f.b = append(f.b, (*r.buf)[r.pos:r.pos+k]...)
		r.pos += k
	}
	r.drop()
	if len(r.park) == 0 {
		r.since = time.Now()
		r.list(w)
		// Room given back before the reader was listed grew no gen: the
		// reader asks the gate once, now that it is listed.
		r.retryAt = time.Time{}
	}
	if r.on == nil {
		r.on = make(map[uint32]int)
	}
	r.park = append(r.park, f)
	r.parkedBytes += f.cost()
	r.on[f.h.stream]++
	return nil
}

// passOn gives the server what it reads of the frame it is given: from
// buf, or for a read as large as buf, straight from the connection.
func (r *gatedReader) passOn(c net.Conn, p []byte) (int, error) {
	p = p[:min(len(p), r.pass)]
	if r.pos == r.end {
		if r.err != nil {
			return 0, r.takeErr()
		}
		if !r.reading && len(p) >= readBufSize {
			n, err := c.Read(p)
			r.pass -= n
			return n, err
		}
		if r.fill(c); r.pos == r.end {
			return 0, r.takeErr()
		}
	}
	n := copy(p, (*r.buf)[r.pos:r.end])
	r.pos += n
	r.pass -= n
	r.drop()
	return n, nil
}

// fill reads more of the connection into buf: what the read under way
// brings, or else what a read brings.
func (r *gatedReader) fill(c net.Conn) {
	if r.reading {
		r.took(<-r.reads)
		return
	}
	n, err := c.Read(r.space())
	r.end += n
	r.err = err
}

// startRead starts a read of w's connection into buf, unless one is under
// way, and returns the channel it ends in.
func (r *gatedReader) startRead(w *resetWatch) chan sockRead {
	if r.reading {
		return r.reads
	}
	if r.reads == nil {
		r.reads = make(chan sockRead, 1)
	}
	r.reading = true
	b, reads, g := r.space(), r.reads, w.gate
	go func() {
		n, err := w.Conn.Read(b)
		reads <- sockRead{n, err}
		g.mu.Lock()
		r.wake.Signal()
		g.mu.Unlock()
	}()
	return reads
}

// took takes what the read under way brought.
func (r *gatedReader) took(res sockRead) {
	r.reading = false
	r.end += res.n
	r.err = res.err
	r.drop()
}

// space is buf's room after its bytes, which it moves to its start.
func (r *gatedReader) space() []byte {
	if r.buf == nil {
		r.buf = readBufs.Get().(*[]byte)
	}
	if r.pos > 0 {
		r.end = copy(*r.buf, (*r.buf)[r.pos:r.end])
		r.pos = 0
	}
	return (*r.buf)[r.end:]
}

// drop gives buf back once it holds nothing and no read is under way.
func (r *gatedReader) drop() {
	if r.pos == r.end && !r.reading && r.buf != nil {
		readBufs.Put(r.buf)
		r.buf = nil
		r.pos, r.end = 0, 0
	}
}

// takeErr returns the read error buf's bytes came with, once.
func (r *gatedReader) takeErr() error {
	err := r.err
	r.err = nil
	return err
}
