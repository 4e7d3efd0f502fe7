package httpc

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// startH2C serves h with net/http's own h2c (HTTP/2 with prior knowledge)
// on a loopback port, with conf's HTTP/2 settings if given.
func startH2C(t *testing.T, h http.Handler, conf ...*http.HTTP2Config) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	if len(conf) > 0 {
		srv.HTTP2 = conf[0]
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, "http://" + ln.Addr().String()
}

// forEachH2Client runs test with each HTTP/2 client: net/http's and the
// lab's own.
func forEachH2Client(t *testing.T, test func(*testing.T, ClientKind)) {
	for _, kind := range []ClientKind{H2CClient, H2FastClient} {
		t.Run(string(kind), func(t *testing.T) { test(t, kind) })
	}
}

func TestH2CSpreadsStreamsOverConns(t *testing.T) { forEachH2Client(t, testH2CSpreadsStreamsOverConns) }

func testH2CSpreadsStreamsOverConns(t *testing.T, kind ClientKind) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2", http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // a body left unread is a stream reset
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: kind, Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for range 8 {
		ep := c.Endpoint(t.Context(), http.MethodPost, "/x")
		wg.Go(func() {
			for range 20 {
				if status, reply, err := ep.Send([]byte(`{}`)); err != nil || status != 200 || string(reply) != "ok" {
					t.Errorf("send: %d %q %v", status, reply, err)
					return
				}
			}
		})
	}
	wg.Wait()
	e := c.H2Events()
	if len(remotes) != 2 || e.Dials != 2 || len(e.GoAways)+len(e.Resets)+len(e.ConnErrors) != 0 {
		t.Errorf("%d connections seen by the server, events %+v; want 2 dials and nothing else", len(remotes), e)
	}
}

func TestH2CCountsResetsAndGoAways(t *testing.T) { forEachH2Client(t, testH2CCountsResetsAndGoAways) }

func testH2CCountsResetsAndGoAways(t *testing.T, kind ClientKind) {
	srv, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler) // the server resets the stream
		}
	}))
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: kind, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Do(t.Context(), http.MethodGet, "/abort", nil); err == nil {
		t.Fatal("a reset stream answered")
	}
	if e := c.H2Events(); e.Resets["INTERNAL_ERROR"] != 1 || e.Dials != 1 {
		t.Fatalf("events %+v, want one INTERNAL_ERROR reset on one connection", e)
	}
	// A graceful shutdown tells the connection to go away, then ends it.
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Do(t.Context(), http.MethodGet, "/", nil); err == nil {
		t.Fatal("a request reached a server that shut down")
	}
	// The GOAWAY was read before the request failed, on the old
	// connection or because of it.
	if e := c.H2Events(); e.GoAways["NO_ERROR"] != 1 {
		t.Errorf("events %+v, want a NO_ERROR GOAWAY", e)
	}
}

func TestH2CCountsAConnectionLostUnderARequest(t *testing.T) {
	forEachH2Client(t, testH2CCountsAConnectionLostUnderARequest)
}

func testH2CCountsAConnectionLostUnderARequest(t *testing.T, kind ClientKind) {
	var srv *http.Server
	srv, url := startH2C(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		_ = srv.Close() // every connection ends, this request's included
	}))
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: kind, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Do(t.Context(), http.MethodGet, "/", nil); err == nil {
		t.Fatal("a request answered on a connection the server closed")
	}
	// The read that ended the connection was counted before the stream
	// on it failed.
	e := c.H2Events()
	var lost int64
	for _, n := range e.ConnErrors {
		lost += n
	}
	if lost != 1 {
		t.Errorf("events %+v, want one connection lost", e)
	}
}

// TestH2OverTLS: for an https:// target the pool speaks HTTP/2 over TLS,
// ALPN h2, still reading the server's frames in the clear (its SETTINGS
// open the connection's streams).
func TestH2OverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c, err := NewHTTPClient(HTTPOptions{Target: srv.URL, Client: H2CClient, Conns: 1, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := c.Endpoint(t.Context(), http.MethodGet, "/")
	for range 3 {
		if status, reply, err := ep.Send(nil); err != nil || status != 200 || string(reply) != "HTTP/2.0" {
			t.Fatalf("over TLS: %d %q %v, want 200 HTTP/2.0", status, reply, err)
		}
	}
	if e := c.H2Events(); e.Dials != 1 {
		t.Errorf("events %+v, want one connection dialled", e)
	}
}

// TestFrameScannerFollowsFramesAcrossReads feeds a server's frames a byte
// at a time and in one piece: the scanner finds the same GOAWAY and
// RST_STREAM codes and SETTINGS either way, and nothing in the other
// frames.
func TestFrameScannerFollowsFramesAcrossReads(t *testing.T) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	_ = fr.WriteSettingsAck()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true})
	_ = fr.WriteData(1, true, bytes.Repeat([]byte{7}, 300)) // payload bytes look like a frame's
	_ = fr.WriteRSTStream(3, http2.ErrCodeRefusedStream)
	_ = fr.WritePing(false, [8]byte{0, 0, 0, 7, 0, 0, 0, 11})
	_ = fr.WriteGoAway(5, http2.ErrCodeEnhanceYourCalm, []byte("calm down"))
	want := []string{"SETTINGS NO_ERROR", "SETTINGS NO_ERROR", "RST_STREAM REFUSED_STREAM", "GOAWAY ENHANCE_YOUR_CALM"}
	for _, step := range []int{1, buf.Len()} {
		var s frameScanner
		var got []string
		data := buf.Bytes()
		for len(data) > 0 {
			n := min(step, len(data))
			s.feed(data[:n], func(typ http2.FrameType, code http2.ErrCode) { got = append(got, typ.String()+" "+code.String()) })
			data = data[n:]
		}
		if !slices.Equal(got, want) {
			t.Errorf("reads of %d bytes: frames %q, want %q", step, got, want)
		}
	}
}

// TestH2CCompletesWithMoreWorkersThanStreams has far more Endpoints on a
// connection than the server allows streams, the lab's usual HTTP/2 shape
// (thousands of workers over 16 connections, 250 streams each): every
// request must complete. net/http's pooled h2 transport with
// StrictMaxConcurrentRequests wedges here (golang/go#70809): each waiting
// request holds a stream reservation, and the request that holds the
// connection's header lock waits for a slot those reservations fill.
func TestH2CCompletesWithMoreWorkersThanStreams(t *testing.T) {
	forEachH2Client(t, testH2CCompletesWithMoreWorkersThanStreams)
}

func testH2CCompletesWithMoreWorkersThanStreams(t *testing.T, kind ClientKind) {
	const streams, workers, each = 4, 64, 20
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("ok"))
	}), &http.HTTP2Config{MaxConcurrentStreams: streams})
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: kind, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A wedged client waits forever; the deadline turns that into a
	// failure, not a speed check.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		ep := c.Endpoint(ctx, http.MethodPost, "/x")
		wg.Go(func() {
			for range each {
				if status, reply, err := ep.Send([]byte(`{}`)); err != nil || status != 200 || string(reply) != "ok" {
					t.Errorf("send: %d %q %v", status, reply, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if n := done.Load(); n != workers*each {
		t.Fatalf("%d of %d requests completed", n, workers*each)
	}
	if e := c.H2Events(); e.Dials != 1 || len(e.GoAways)+len(e.Resets)+len(e.ConnErrors) != 0 {
		t.Errorf("events %+v, want one dial and nothing else", e)
	}
}

// TestH2CSendsARefusedStreamAgain has a server refuse the first stream
// (REFUSED_STREAM: not processed, RFC 9113 §8.7) and answer the next: the
// request succeeds, its body sent twice, and the reset is counted.
func TestH2CSendsARefusedStreamAgain(t *testing.T) {
	forEachH2Client(t, testH2CSendsARefusedStreamAgain)
}

func testH2CSendsARefusedStreamAgain(t *testing.T, kind ClientKind) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	bodies := make(chan string, 4)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serveRefusingFirst(c, bodies)
	}()
	c, err := NewHTTPClient(HTTPOptions{Target: "http://" + ln.Addr().String(), Client: kind, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	status, reply, err := c.Do(t.Context(), http.MethodPost, "/x", []byte("hello"))
	if err != nil || status != 200 || string(reply) != "ok" {
		t.Fatalf("reply %d %q %v; want 200 ok after one retry", status, reply, err)
	}
	if e := c.H2Events(); e.Resets["REFUSED_STREAM"] != 1 || e.Dials != 1 {
		t.Errorf("events %+v, want one REFUSED_STREAM on one connection", e)
	}
	close(bodies)
	var got []string
	for b := range bodies {
		got = append(got, b)
	}
	if !slices.Equal(got, []string{"hello", "hello"}) {
		t.Errorf("bodies received %q, want the body twice", got)
	}
}

// serveRefusingFirst speaks HTTP/2 on c: it refuses the first stream and
// answers 200 "ok" to the next, sending each stream's body to bodies.
func serveRefusingFirst(c net.Conn, bodies chan<- string) {
	if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	_ = fr.WriteSettings()
	streams := map[uint32][]byte{}
	refused := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			streams[f.StreamID] = nil
		case *http2.DataFrame:
			id := f.StreamID
			streams[id] = append(streams[id], f.Data()...)
			if !f.StreamEnded() {
				continue
			}
			bodies <- string(streams[id])
			if !refused {
				refused = true
				_ = fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
				continue
			}
			var hdr bytes.Buffer
			enc := hpack.NewEncoder(&hdr)
			_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hdr.Bytes(), EndHeaders: true})
			_ = fr.WriteData(id, true, []byte("ok"))
		}
	}
}

// TestAckScannerFindsTheClientsSettingsAck: the client's preface, its
// SETTINGS, a WINDOW_UPDATE and then its acknowledgement of the server's,
// in writes of any size: only the acknowledgement counts.
func TestAckScannerFindsTheClientsSettingsAck(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	_ = fr.WriteWindowUpdate(0, 1<<20)
	before := buf.Len()
	_ = fr.WriteSettingsAck()
	for _, step := range []int{1, 7, buf.Len()} {
		var s ackScanner
		data := buf.Bytes()
		for at := 0; at < len(data); at += step {
			seen := s.feed(data[at:min(at+step, len(data))])
			if end := min(at+step, len(data)); seen != (end == len(data)) {
				t.Fatalf("writes of %d bytes: seen %v after %d of %d bytes (the ack starts at %d)", step, seen, end, len(data), before)
			}
		}
	}
}
