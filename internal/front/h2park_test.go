package front

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHTTP2FullParkKeepsBodiesComing: a client that keeps to flow control
// can fill maxParked, since a parked frame costs more than its payload
// and header blocks are not flow-controlled. With room for one request,
// it opens stream 1 and streams 3 to 33 without their bodies, sends each
// of 3 to 33 a whole stream window of DATA, and then stream 1's body,
// all within the connection's window. Stream 1's body comes after more
// parked frames than maxParked holds; it still reaches stream 1's
// request, which holds the one place, and every stream is served in turn
// (waits end only after an hour). On either HTTP/2 server.
func TestHTTP2FullParkKeepsBodiesComing(t *testing.T) {
	onBothServers(t, fullParkKeepsBodiesComing)
}

func fullParkKeepsBodiesComing(t *testing.T, server HTTP2Server) {
	const last, window, firstBody = 33, initialWindow, 10
	l := Limits{MaxRequests: 1, BodyTimeout: time.Hour}
	var mu sync.Mutex
	read := make(map[string]int64) // body bytes each request read, by path
	addr, adm := gatedServer(t, server, l, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		mu.Lock()
		read[r.URL.Path] = n
		mu.Unlock()
	})
	c := dialRaw(t, addr)
	out, fr := clientOpening()
	enc := newRequestEncoder()
	ids := []uint32{1}
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc.encode("POST", "/1", strconv.Itoa(firstBody)), EndHeaders: true})
	for id := uint32(3); id <= last; id += 2 {
		ids = append(ids, id)
		path := "/" + strconv.Itoa(int(id))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc.encode("POST", path, strconv.Itoa(window)), EndHeaders: true})
	}
	if _, err := c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	in := http2.NewFramer(c, c)
	in.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	awaitConnWindow(t, in, (len(ids)-1)*window+firstBody)
	out.Reset()
	chunk := make([]byte, window)
	for _, id := range ids[1:] {
		for b := chunk; len(b) > 0; b = b[min(len(b), 16<<10):] {
			_ = fr.WriteData(id, len(b) <= 16<<10, b[:min(len(b), 16<<10)])
		}
	}
	_ = fr.WriteData(1, true, make([]byte, firstBody))
	var wrote sync.WaitGroup
	wrote.Go(func() {
		if _, err := c.Write(out.Bytes()); err != nil {
			t.Error(err)
		}
	})
	defer wrote.Wait()
	for id, st := range awaitEnds(t, in, ids...) {
		if st != "200" {
			t.Errorf("stream %d: status %s, want 200", id, st)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		path, want := "/"+strconv.Itoa(int(id)), int64(window)
		if id == 1 {
			want = firstBody
		}
		if read[path] != want {
			t.Errorf("%s read %d bytes of its body, want %d", path, read[path], want)
		}
	}
	if n := testutil.ToFloat64(adm.g.rejected.WithLabelValues(reasonRequests)); n != 0 {
		t.Errorf("%v requests refused max_requests, want none", n)
	}
}

// awaitConnWindow reads the server's frames, acknowledging its SETTINGS,
// until its connection window, RFC 9113's initial one widened by its
// WINDOW_UPDATEs, holds n bytes: a client that keeps to flow control
// sends no more before.
func awaitConnWindow(t *testing.T, in *http2.Framer, n int) {
	t.Helper()
	for w := initialWindow; w < n; {
		f, err := in.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = in.WriteSettingsAck()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				w += int(f.Increment)
			}
		}
	}
}

// gatedPipe is a gated watch over one end of a pipe, read by the test
// itself, under limits l, and the pipe's other end, the client's.
func gatedPipe(t *testing.T, l Limits) (*resetWatch, net.Conn) {
	t.Helper()
	adm := NewAdmission(l, nil)
	server, client := net.Pipe()
	w := newResetWatch(server, adm.g).gated()
	t.Cleanup(func() {
		_ = w.Close()
		_ = client.Close()
	})
	return w, client
}

// send writes b to c, off the test's goroutine: the pipe's write ends
// once the watch has read it all.
func send(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	var wrote sync.WaitGroup
	wrote.Go(func() { _, _ = c.Write(b) })
	t.Cleanup(wrote.Wait) // after the pipe's close, which ends the write
}

// readN reads n bytes from w, as the server's reader does.
func readN(t *testing.T, w *resetWatch, n int) {
	t.Helper()
	p := make([]byte, 4<<10)
	for n > 0 {
		k, err := w.Read(p[:min(len(p), n)])
		if err != nil {
			t.Fatalf("%d bytes still to read: %v", n, err)
		}
		n -= k
	}
}

// openingFrames is a client's preface, SETTINGS, and the HEADERS of
// stream 1, which the gate, with room for one request, lets in.
func openingFrames() (*bytes.Buffer, *http2.Framer) {
	out, fr := clientOpening()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: newRequestEncoder().encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	return out, fr
}

// clientOpening is a client's preface and SETTINGS, in a buffer, and a
// framer that writes the client's next frames after them.
func clientOpening() (*bytes.Buffer, *http2.Framer) {
	out := new(bytes.Buffer)
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(out, nil)
	_ = fr.WriteSettings()
	return out, fr
}

// dialRaw is a connection to addr for a test's own frames, closed at the
// test's end.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestParkReleasedKeepsNothing: a flood of tiny frames parked behind a
// new stream fills maxParked, and the stream is let in with them all;
// once they are given to the server, the reader holds none of the lists
// the flood grew (the park, its count by stream, the released frames).
func TestParkReleasedKeepsNothing(t *testing.T) {
	w, c := gatedPipe(t, Limits{MaxRequests: 1})
	out, fr := openingFrames()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: newRequestEncoder().encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	const frames = maxParked/(frameHeaderLen+4) + 1 // past maxParked whatever a frame costs besides its bytes
	for range frames {
		_ = fr.WriteWindowUpdate(3, 1)
	}
	send(t, c, out.Bytes())
	readN(t, w, out.Len())
	r := &w.gr
	if cap(r.park) != 0 || r.on != nil || cap(r.rel) != 0 {
		t.Fatalf("a flood of %d frames parked until maxParked and given: the park keeps room for %d, the count by stream is kept (%v), the released list keeps room for %d; want none",
			frames, cap(r.park), r.on != nil, cap(r.rel))
	}
}

// TestGateGenOnlyWhileParked: a place given back grows the gate's gen,
// which every reader with parked frames watches, only while there is
// such a reader: not before one parks, and not once its connection has
// closed with its frames still parked.
func TestGateGenOnlyWhileParked(t *testing.T) {
	w, c := gatedPipe(t, Limits{MaxRequests: 1})
	g := w.g
	giveBack := func() uint64 {
		held, no := g.takeWork(netip.Addr{}, 1)
		if no != nil {
			t.Fatalf("no place: %v", no)
		}
		before := g.gate.gen.Load()
		g.release(held)
		return g.gate.gen.Load() - before
	}
	if n := giveBack(); n != 0 {
		t.Errorf("no reader parked: a place given back grew gen by %d, want 0", n)
	}
	out, fr := openingFrames()
	opening := out.Len()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: newRequestEncoder().encode("GET", "/", ""), EndHeaders: true, EndStream: true})
	parked := out.Len() - opening
	_ = fr.WritePing(false, [8]byte{}) // given to the server past the parked stream
	send(t, c, out.Bytes())
	readN(t, w, out.Len()-parked)
	w.release(1) // stream 1 admitted: a place given back makes room for stream 3
	if n := giveBack(); n == 0 {
		t.Error("a reader parked: a place given back did not grow gen")
	}
	_ = w.Close()
	if n := giveBack(); n != 0 {
		t.Errorf("the parked reader's connection closed: a place given back grew gen by %d, want 0", n)
	}
}
