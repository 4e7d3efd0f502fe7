package front

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// gatePending is the gate's count of streams pending.
func gatePending(h *h2gate) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending.Load()
}

// untilTrue polls cond, yielding between polls, until it holds.
func untilTrue(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// TestHTTP2UnhandledStreamsGivePendingBack: streams the server ends
// without the front's handler give their pending back as they end: two
// whose header lists are past the server's bound (431: a client's cheap
// way to make them, one large field sent once and then named by its
// HPACK index), and one with a connection-specific field (net/http
// answers 400, surge's server resets it). Pending counts are the gate's,
// shared by every connection, so a leak here would shut every client
// out. On either HTTP/2 server.
func TestHTTP2UnhandledStreamsGivePendingBack(t *testing.T) {
	onBothServers(t, unhandledStreamsGivePendingBack)
}

func unhandledStreamsGivePendingBack(t *testing.T, server HTTP2Server) {
	addr, adm := gatedServer(t, server, Limits{MaxRequests: 10}, time.Hour, func(w http.ResponseWriter, r *http.Request) {})
	c := dialRaw(t, addr)
	out, fr := clientOpening()
	e := newRequestEncoder()
	large := strings.Repeat("x", 4000)
	block := func(extra ...hpack.HeaderField) []byte {
		e.buf.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "front"}, {":path", "/"}} {
			_ = e.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		for _, f := range extra {
			_ = e.enc.WriteField(f)
		}
		return append([]byte(nil), e.buf.Bytes()...)
	}
	tooLarge := make([]hpack.HeaderField, 8) // far past maxHeaderList decoded
	for i := range tooLarge {
		tooLarge[i] = hpack.HeaderField{Name: "x-large", Value: large}
	}
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(tooLarge...), EndHeaders: true, EndStream: true})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(tooLarge...), EndHeaders: true, EndStream: true})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: block(hpack.HeaderField{Name: "connection", Value: "keep-alive"}), EndHeaders: true, EndStream: true})
	if _, err := c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	in := http2.NewFramer(c, c)
	in.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	statuses := awaitEnds(t, in, 1, 3, 5)
	if statuses[1] != "431" || statuses[3] != "431" {
		t.Fatalf("oversized header lists answered %q and %q, want 431", statuses[1], statuses[3])
	}
	// Each stream's end passed the watch before the client read it.
	if n := gatePending(adm.g.gate); n != 0 {
		t.Fatalf("three streams ended without the handler (%v): %d still pending, want 0", statuses, n)
	}
	_ = in.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: block(), EndHeaders: true, EndStream: true})
	if st := awaitEnd(t, in, 7); st != "200" {
		t.Fatalf("a request after them: %s, want 200", st)
	}
}

// TestHTTP2ServerResetAfterDecideCountsOnce: a stream whose request
// admission has decided on, reset by the server (the client sends DATA
// after ending it), does not end the pending of another stream: the
// connection's next stream, its body still to come, stays counted.
// On either HTTP/2 server.
func TestHTTP2ServerResetAfterDecideCountsOnce(t *testing.T) {
	onBothServers(t, serverResetAfterDecideCountsOnce)
}

func serverResetAfterDecideCountsOnce(t *testing.T, server HTTP2Server) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	addr, adm := gatedServer(t, server, Limits{MaxRequests: 2, BodyTimeout: time.Hour}, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
	})
	c := dialRaw(t, addr)
	t.Cleanup(func() { close(release) }) // first: the server's shutdown waits for the handler
	out, fr := clientOpening()
	e := newRequestEncoder()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: e.encode("GET", "/hold", ""), EndHeaders: true, EndStream: true})
	if _, err := c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	<-entered // admitted: stream 1 pends no more
	gate := adm.g.gate
	if n := gatePending(gate); n != 0 {
		t.Fatalf("stream 1 admitted: %d pending, want 0", n)
	}
	out.Reset()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: e.encode("POST", "/", "10"), EndHeaders: true})
	if _, err := c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	untilTrue(func() bool { return gatePending(gate) == 1 })
	out.Reset()
	_ = fr.WriteData(1, false, []byte("late")) // on a stream the client ended: the server resets it
	if _, err := c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	in := http2.NewFramer(c, c)
	in.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if st := awaitEnd(t, in, 1); !strings.HasPrefix(st, "RST_STREAM") {
		t.Fatalf("DATA after stream 1's end: %s, want RST_STREAM", st)
	}
	if n := gatePending(gate); n != 1 {
		t.Fatalf("stream 1 reset after admission: %d pending, want 1 (stream 3, its body still to come)", n)
	}
}

// TestClientResetGivesPendingBack: a stream the client resets before its
// handler has run gives its pending back at once: net/http runs no
// handler for a stream reset while its handler waits to start.
func TestClientResetGivesPendingBack(t *testing.T) {
	w, c := gatedPipe(t, Limits{MaxRequests: 2})
	out, fr := openingFrames()
	_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
	send(t, c, out.Bytes())
	readN(t, w, out.Len())
	if n := gatePending(w.gate); n != 0 {
		t.Fatalf("stream 1 reset by the client: %d pending, want 0", n)
	}
}

// TestGateGenOnlyWithRoom: while a reader has parked frames, a place
// given back grows the gate's gen only once the gate has room: a place
// given back while requests and pending streams still fill MaxRequests
// wakes no reader.
func TestGateGenOnlyWithRoom(t *testing.T) {
	w, c := gatedPipe(t, Limits{MaxRequests: 2})
	g := w.g
	out, fr := openingFrames() // stream 1 pends
	opening := out.Len()
	send(t, c, out.Bytes())
	readN(t, w, opening)
	var held []hold
	for range 2 {
		h, no := g.takeWork(netip.Addr{}, 1)
		if no != nil {
			t.Fatalf("no place: %v", no)
		}
		held = append(held, h)
	}
	out.Reset()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: newRequestEncoder().encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	parked := out.Len()
	_ = fr.WritePing(false, [8]byte{}) // given to the server past the parked stream
	send(t, c, out.Bytes())
	readN(t, w, out.Len()-parked)
	giveBack := func(h hold) uint64 {
		before := g.gate.gen.Load()
		g.release(h)
		return g.gate.gen.Load() - before
	}
	if n := giveBack(held[0]); n != 0 {
		t.Errorf("a place given back, one request and stream 1 still filling MaxRequests: gen grew by %d, want 0", n)
	}
	if n := giveBack(held[1]); n == 0 {
		t.Error("a place given back, room for stream 3: gen did not grow")
	}
}

// TestHTTP2ConnWaitersBounded: at most maxConnWaiting requests of one
// connection wait for a place; the next is refused at once, as on a
// connection not gated, rather than holding its handler.
func TestHTTP2ConnWaitersBounded(t *testing.T) {
	w, _ := gatedPipe(t, Limits{MaxRequests: 1, BodyTimeout: time.Hour})
	g := w.g
	g.gate.stall = time.Hour
	held, no := g.takeWork(netip.Addr{}, 1)
	if no != nil {
		t.Fatalf("no place: %v", no)
	}
	t.Cleanup(func() { g.release(held) })
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), h2Conn{}, w))
	t.Cleanup(cancel) // ends the waits
	request := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
		r.ProtoMajor = 2
		r, _ = entered(nil, r)
		return r
	}
	waiting := func() int64 {
		g.gate.mu.Lock()
		defer g.gate.mu.Unlock()
		return g.gate.waiting.Load()
	}
	ended := make(chan *refusal, maxConnWaiting+1)
	take := func() {
		h, no := g.gate.takeWork(request(), netip.Addr{}, 1)
		g.release(h)
		ended <- no
	}
	for range maxConnWaiting {
		go take()
	}
	untilTrue(func() bool { return waiting() == maxConnWaiting })
	go take()
	for {
		select {
		case no := <-ended:
			if no != refuseRequests {
				t.Fatalf("request past %d waiting: %v, want refused max_requests", maxConnWaiting, no)
			}
			if n := waiting(); n != maxConnWaiting {
				t.Fatalf("%d waiting, want %d", n, maxConnWaiting)
			}
			cancel()
			for range maxConnWaiting {
				<-ended
			}
			return
		default:
			if n := waiting(); n > maxConnWaiting {
				t.Fatalf("%d requests of one connection wait for a place, want at most %d", n, maxConnWaiting)
			}
			runtime.Gosched()
		}
	}
}

// TestStreamIDOfBothServers: a gated request's ticket knows its stream's
// id on either HTTP/2 server, so that its pending ends once: surge's
// server names it, net/http's writer holds it (streamID).
func TestStreamIDOfBothServers(t *testing.T) {
	onBothServers(t, func(t *testing.T, server HTTP2Server) {
		ids := make(chan uint32, 2)
		addr, _ := gatedServer(t, server, Limits{MaxRequests: 10}, time.Hour, func(w http.ResponseWriter, r *http.Request) {
			ids <- netRequestOf(r.Context()).ticket.id
		})
		c := dialRaw(t, addr)
		out, fr := clientOpening()
		e := newRequestEncoder()
		for _, id := range []uint32{1, 3} {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: e.encode("GET", "/", ""), EndHeaders: true, EndStream: true})
		}
		if _, err := c.Write(out.Bytes()); err != nil {
			t.Fatal(err)
		}
		in := http2.NewFramer(c, c)
		in.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		awaitEnds(t, in, 1, 3)
		got := map[uint32]bool{<-ids: true, <-ids: true}
		if !got[1] || !got[3] {
			t.Fatalf("tickets of streams 1 and 3 name streams %v", got)
		}
	})
}

// TestServerGoAwayGivesPendingBack: the streams past the last one a
// server's GOAWAY names are never served (RFC 9113 §6.8: the server
// ignores them), so their pending ends with the GOAWAY, and a stream the
// client opens after it counts none.
func TestServerGoAwayGivesPendingBack(t *testing.T) {
	w, c := gatedPipe(t, Limits{MaxRequests: 10})
	go func() { _, _ = io.Copy(io.Discard, c) }() // what the server writes; ends with the pipe
	out, fr := openingFrames()
	e := newRequestEncoder()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: e.encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	send(t, c, out.Bytes())
	readN(t, w, out.Len())
	if n := gatePending(w.gate); n != 2 {
		t.Fatalf("streams 1 and 3 given: %d pending, want 2", n)
	}
	var away bytes.Buffer
	_ = http2.NewFramer(&away, nil).WriteGoAway(1, http2.ErrCodeNo, nil)
	if _, err := w.Write(away.Bytes()); err != nil {
		t.Fatal(err)
	}
	if n := gatePending(w.gate); n != 1 {
		t.Fatalf("GOAWAY naming stream 1 last: %d pending, want 1", n)
	}
	out.Reset()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: e.encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	send(t, c, out.Bytes())
	readN(t, w, out.Len())
	if n := gatePending(w.gate); n != 1 {
		t.Fatalf("stream 5 opened after the GOAWAY: %d pending, want 1", n)
	}
}
