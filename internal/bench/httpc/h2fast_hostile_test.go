package httpc

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2Conn is the server's side of one connection in a scripted test.
type rawH2Conn struct {
	n  int // 1 for the first connection accepted
	fr *http2.Framer
}

// startRawH2 runs a server that answers each connection's preface with
// settings, then hands the connection to script, which plays the
// server, well behaved or not.
func startRawH2(t *testing.T, settings []http2.Setting, script func(*rawH2Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				if _, err := io.ReadFull(nc, make([]byte, len(http2.ClientPreface))); err != nil {
					return
				}
				fr := http2.NewFramer(nc, nc)
				if fr.WriteSettings(settings...) != nil {
					return
				}
				script(&rawH2Conn{n: int(n.Add(1)), fr: fr})
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// request reads frames up to the next request's HEADERS and returns its
// stream, or 0 once the connection ends.
func (c *rawH2Conn) request() uint32 {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return 0
		}
		if h, ok := f.(*http2.HeadersFrame); ok {
			return h.StreamID
		}
	}
}

// headers writes a header block of fields on stream id.
func (c *rawH2Conn) headers(id uint32, endStream bool, fields ...string) {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: endStream, EndHeaders: true})
}

// rawH2Client is an h2fast client of url, one connection, timeout t.
func rawH2Client(t *testing.T, url string, timeout time.Duration) (*HTTPClient, *Endpoint) {
	t.Helper()
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: H2FastClient, Conns: 1, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ep := c.Endpoint(t.Context(), http.MethodGet, "/")
	t.Cleanup(ep.Close)
	return c, ep
}

// TestH2FastRejectsInvalidSettings: a SETTINGS_MAX_FRAME_SIZE of 0 would
// cut a header block into empty frames for ever; the client ends the
// connection instead.
func TestH2FastRejectsInvalidSettings(t *testing.T) {
	url := startRawH2(t, []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 0}}, func(c *rawH2Conn) { c.request() })
	_, ep := rawH2Client(t, url, time.Hour)
	if _, _, err := ep.Send(nil); err == nil {
		t.Fatal("a server with a max frame size of 0 served a request")
	}
}

// TestH2FastWaitsForAStreamWithinTheTimeout: a server that allows no
// stream at all makes the request time out, not wait for ever.
func TestH2FastWaitsForAStreamWithinTheTimeout(t *testing.T) {
	url := startRawH2(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(c *rawH2Conn) { c.request() })
	_, ep := rawH2Client(t, url, 100*time.Millisecond)
	if _, _, err := ep.Send(nil); ErrorKey(err) != "error timeout" {
		t.Fatalf("got %v (%s), want a timeout", err, ErrorKey(err))
	}
}

// TestH2FastIgnoresTrailers: a reply whose stream ends with a trailer
// block is whole, its status the first block's.
func TestH2FastIgnoresTrailers(t *testing.T) {
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		for id := c.request(); id != 0; id = c.request() {
			c.headers(id, false, ":status", "201")
			_ = c.fr.WriteData(id, false, []byte("ok"))
			c.headers(id, true, "x-checksum", "1")
		}
	})
	_, ep := rawH2Client(t, url, time.Hour)
	for range 2 {
		status, reply, err := ep.Send(nil)
		if err != nil || status != 201 || string(reply) != "ok" {
			t.Fatalf("got %d %q %v, want 201 \"ok\"", status, reply, err)
		}
	}
}

// TestH2FastPushPromiseEndsTheConnection: push is disabled, so a
// PUSH_PROMISE is a protocol error, not a header block left undecoded.
func TestH2FastPushPromiseEndsTheConnection(t *testing.T) {
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		id := c.request()
		_ = c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: id, PromiseID: 2, BlockFragment: []byte{0x82}, EndHeaders: true})
		c.headers(id, true, ":status", "200")
		c.request()
	})
	_, ep := rawH2Client(t, url, time.Hour)
	if _, _, err := ep.Send(nil); err == nil {
		t.Fatal("a reply after a PUSH_PROMISE was taken")
	}
}

// TestH2FastRetriesOnlyUnprocessed: a stream above GOAWAY's last stream
// goes again on a new connection; a stream at or below it may have been
// processed and fails when the connection closes, never sent twice.
func TestH2FastRetriesOnlyUnprocessed(t *testing.T) {
	var seen atomic.Int32
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		id := c.request()
		seen.Add(1)
		switch c.n {
		case 1: // not processed
			_ = c.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			c.request()
		case 2:
			c.headers(id, true, ":status", "200")
			id = c.request()
			seen.Add(1)
			_ = c.fr.WriteGoAway(id, http2.ErrCodeNo, nil) // processing, then gone
		}
	})
	c, ep := rawH2Client(t, url, time.Hour)
	if status, _, err := ep.Send(nil); err != nil || status != 200 {
		t.Fatalf("the request refused by GOAWAY: %d %v, want it retried and 200", status, err)
	}
	if _, _, err := ep.Send(nil); err == nil {
		t.Fatal("a stream at GOAWAY's last stream and then lost succeeded")
	}
	if e := c.H2Events(); e.Dials != 2 || seen.Load() != 3 {
		t.Errorf("%d dials, %d requests seen; want 2 and 3 (no request sent twice)", e.Dials, seen.Load())
	}
}

// TestH2FastRefusedStreamRetries: REFUSED_STREAM says the server did not
// process the stream: it goes again.
func TestH2FastRefusedStreamRetries(t *testing.T) {
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		id := c.request()
		_ = c.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		id = c.request()
		c.headers(id, true, ":status", "200")
		c.request()
	})
	_, ep := rawH2Client(t, url, time.Hour)
	if status, _, err := ep.Send(nil); err != nil || status != 200 {
		t.Fatalf("got %d %v, want the refused stream retried", status, err)
	}
}

// TestH2FastLostConnectionFailsEveryStream: when the connection drops,
// every Endpoint waiting on it gets an error.
func TestH2FastLostConnectionFailsEveryStream(t *testing.T) {
	const endpoints = 8
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		if c.n == 1 { // every stream, then the connection closes
			for range endpoints {
				c.request()
			}
		}
	})
	c, _ := rawH2Client(t, url, time.Hour)
	errs := make(chan error)
	for range endpoints {
		ep := c.Endpoint(t.Context(), http.MethodGet, "/")
		defer ep.Close()
		go func() {
			_, _, err := ep.Send(nil)
			errs <- err
		}()
	}
	for range endpoints {
		if err := <-errs; err == nil {
			t.Errorf("a stream on a lost connection: %v, want an error", err)
		}
	}
}

// TestH2FastWaitForAStreamEndsWithTheContext: a request waiting for a
// stream the server never allows ends when its Endpoint's context does.
func TestH2FastWaitForAStreamEndsWithTheContext(t *testing.T) {
	settled := make(chan struct{})
	url := startRawH2(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(c *rawH2Conn) {
		close(settled)
		c.request()
	})
	c, _ := rawH2Client(t, url, time.Hour)
	sendCancelled(t, c, settled)
}

// TestH2FastBoundsAReply: a reply past maxReplyBytes fails its stream
// rather than growing without end.
func TestH2FastBoundsAReply(t *testing.T) {
	url := startRawH2(t, nil, func(c *rawH2Conn) {
		id := c.request()
		c.headers(id, false, ":status", "200")
		chunk := make([]byte, 16<<10)
		for sent := 0; sent <= maxReplyBytes; sent += len(chunk) {
			if c.fr.WriteData(id, false, chunk) != nil {
				return
			}
		}
		_ = c.fr.WriteData(id, true, nil)
		c.request()
	})
	_, ep := rawH2Client(t, url, time.Hour)
	if _, reply, err := ep.Send(nil); err == nil {
		t.Fatalf("a reply of %d bytes taken", len(reply))
	}
}

// TestH2FastCloseEndsItsGoroutines: once the client is closed, no
// connection's reader, writer or reaper is left, a timed-out stream's
// connection included.
func TestH2FastCloseEndsItsGoroutines(t *testing.T) {
	url := startHangingH2C(t)
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: H2FastClient, Conns: 3, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/ok", "/ok", "/hang"} {
		ep := c.Endpoint(t.Context(), http.MethodGet, path)
		_, _, _ = ep.Send(nil)
		ep.Close()
	}
	if e := c.H2Events(); e.Dials != 3 {
		t.Fatalf("%d connections dialled, want 3", e.Dials)
	}
	c.Close()
	buf := make([]byte, 1<<20)
	if stacks := buf[:runtime.Stack(buf, true)]; bytes.Contains(stacks, []byte("(*h2FastConn)")) {
		t.Errorf("goroutines of a connection left after Close:\n%s", stacks)
	}
}
