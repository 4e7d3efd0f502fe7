package front

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// frames is a byte stream of three frames: HEADERS on stream 1,
// RST_STREAM on stream 1 and a DATA frame of 100 bytes on stream 3.
func frames(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteData(3, false, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFrameSplitterPieces: however the stream is cut, the splitter finds
// the same frames and reports where the last complete one ends.
func TestFrameSplitterPieces(t *testing.T) {
	all := frames(t)
	bounds := map[int]bool{0: true, 10: true, 23: true, len(all): true} // frame ends
	for cut := 0; cut <= len(all); cut++ {
		var s frameSplitter
		var got []string
		note := func(h frameHead) { got = append(got, string(rune('0'+h.typ))+string(rune('0'+h.stream))) }
		end1 := s.split(all[:cut], note)
		end2 := s.split(all[cut:], note)
		if want := "11 31 03"; strings.Join(got, " ") != want {
			t.Fatalf("cut at %d: frames %q, want %q", cut, strings.Join(got, " "), want)
		}
		last := -1
		for b := range bounds {
			if b <= cut && b > last {
				last = b
			}
		}
		if end1 != last {
			t.Fatalf("cut at %d: first piece ends its last frame at %d, want %d", cut, end1, last)
		}
		if end2 != len(all)-cut {
			t.Fatalf("cut at %d: second piece ends at %d, want %d", cut, end2, len(all)-cut)
		}
		if !s.atBoundary() {
			t.Fatalf("cut at %d: not on a boundary after the whole stream", cut)
		}
	}
}

// TestGoAwayFrame: the GOAWAY the watch sends parses as one.
func TestGoAwayFrame(t *testing.T) {
	f, err := http2.NewFramer(nil, bytes.NewReader(goAway(7, errEnhanceYourCal, "too_many_resets"))).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := f.(*http2.GoAwayFrame)
	if !ok || g.LastStreamID != 7 || g.ErrCode != http2.ErrCodeEnhanceYourCalm || string(g.DebugData()) != "too_many_resets" {
		t.Fatalf("got %v", f)
	}
}

// TestFrameSplitterIncrement: a WINDOW_UPDATE's increment is read however
// the stream is cut, and reported once whole.
func TestFrameSplitterIncrement(t *testing.T) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	if err := fr.WriteWindowUpdate(0, 1<<31-1); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteWindowUpdate(5, 0x01020304); err != nil {
		t.Fatal(err)
	}
	all := b.Bytes()
	for cut := 0; cut <= len(all); cut++ {
		var s frameSplitter
		var got []frameHead
		note := func(h frameHead) { got = append(got, h) }
		s.split(all[:cut], note)
		s.split(all[cut:], note)
		want := []frameHead{{typ: frameWindowUpdate, length: 4, word: 1<<31 - 1}, {typ: frameWindowUpdate, stream: 5, length: 4, word: 0x01020304}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("cut at %d: %+v, want %+v", cut, got, want)
		}
	}
}

// TestTrippedWatchLingersBesideTheReader: the server's reader may still be
// inside a read when a tripped connection closes, so the linger that
// follows must read the socket, never the replayed bytes the reader is
// consuming (the race detector fails the old way).
func TestTrippedWatchLingersBesideTheReader(t *testing.T) {
	client, server := net.Pipe()
	replay := &replayConn{Conn: server, head: make([]byte, 4096)}
	w := &resetWatch{Conn: replay}
	w.calm.Store(true)
	go func() { _, _ = io.Copy(io.Discard, client) }()
	go func() {
		_, _ = client.Write(make([]byte, 4096))
		_ = client.Close()
	}()
	readerDone := make(chan int)
	go func() {
		b, n := make([]byte, 1), 0
		for {
			if _, err := replay.Read(b); err != nil {
				readerDone <- n
				return
			}
			n++
		}
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := <-readerDone; n < 4096 {
		t.Fatalf("the reader got %d bytes, want the 4096 replayed at least", n)
	}
}

// scriptConn reads what a test puts in in and discards what is written.
type scriptConn struct {
	net.Conn
	in bytes.Buffer
}

func (c *scriptConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *scriptConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1} }

// TestAnsweredStreamResetNotCounted: the client's reset of a stream the
// server has answered before its request came whole (a refusal that does
// not read the body) is not counted against the reset rate, as one of an
// unanswered stream is. Both streams count pending from their HEADERS,
// their bodies still to come, until admission decides on them.
func TestAnsweredStreamResetNotCounted(t *testing.T) {
	g := newGuard(Limits{MaxRequests: 10, MaxStreams: 1}.withDefaults(), nil)
	c := &scriptConn{}
	w := newResetWatch(c, g).gated()
	client := http2.NewFramer(&c.in, nil)
	var out bytes.Buffer
	server := http2.NewFramer(&out, nil)
	read := func() { // all the watch gives the server
		t.Helper()
		for {
			if _, err := w.Read(make([]byte, 64)); err == io.EOF {
				return
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	c.in.WriteString(http2.ClientPreface)
	for _, id := range []uint32{1, 3} {
		if err := client.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x83}, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if len(w.pending) != 2 || g.gate.pending.Load() != 2 {
		t.Fatalf("streams pending: watch %d, gate %d; want 2, both streams from their HEADERS", len(w.pending), g.gate.pending.Load())
	}
	if err := server.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true, EndStream: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1, 3} {
		if err := client.WriteData(id, true, []byte("body")); err != nil {
			t.Fatal(err)
		}
	}
	read()
	burst := w.resets.Tokens()
	if err := client.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	read()
	if got := w.resets.Tokens(); got < burst-0.5 {
		t.Fatalf("reset of an answered stream counted: %.1f tokens left of %.1f", got, burst)
	}
	if err := client.WriteRSTStream(3, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	read()
	if got := w.resets.Tokens(); got > burst-0.5 {
		t.Fatalf("reset of an unanswered stream not counted: %.1f tokens left of %.1f", got, burst)
	}
}
