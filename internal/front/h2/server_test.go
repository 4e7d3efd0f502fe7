package h2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2cClient is an HTTP/2 client with prior knowledge, as surge's own load
// clients are.
func h2cClient() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// Bodies many times the windows, both ways and on many streams at once,
// arrive whole: flow control gives back what each side reads.
func TestLargeBodiesBothWays(t *testing.T) {
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.New()
		n, err := io.Copy(sum, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%x\n", sum.Sum(nil))
		_, _ = w.Write(bytes.Repeat([]byte{'r'}, int(n)))
	})})
	client := h2cClient()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			body := bytes.Repeat([]byte{byte('a' + i)}, 3<<20+i)
			resp, err := client.Post("http://"+addr+"/", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Error(err)
				return
			}
			want := fmt.Sprintf("%x\n", sha256.Sum256(body))
			if !bytes.HasPrefix(got, []byte(want)) || len(got) != len(want)+len(body) {
				t.Errorf("stream %d: got %d bytes starting %.20q", i, len(got), got)
			}
			if resp.ProtoMajor != 2 {
				t.Errorf("served over %s", resp.Proto)
			}
		})
	}
	wg.Wait()
}

// A small response goes out whole when the handler returns, with its
// length, a sniffed type and a Date; a flushed one as it is written.
func TestResponseFraming(t *testing.T) {
	next := make(chan struct{})
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			_, _ = io.WriteString(w, "<html>hi</html>")
			return
		}
		_, _ = io.WriteString(w, "first")
		http.NewResponseController(w).Flush()
		<-next // the client has read the first part
		_, _ = io.WriteString(w, "second")
	})})
	client := h2cClient()
	resp, err := client.Get("http://" + addr + "/small")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "<html>hi</html>" || resp.ContentLength != int64(len(b)) ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Date") == "" {
		t.Errorf("small: %q, length %d, header %v", b, resp.ContentLength, resp.Header)
	}
	resp, err = client.Get("http://" + addr + "/flushed")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("first part: %q %v", first, err)
	}
	close(next)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second" || resp.ContentLength != -1 {
		t.Errorf("rest: %q %v, length %d", rest, err, resp.ContentLength)
	}
}

// Trailers travel both ways: the client's reach the handler once it has
// read the body, the handler's reach the client after the body.
func TestTrailers(t *testing.T) {
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "body")
		w.Header().Set("X-Sum", "got "+r.Trailer.Get("X-Check"))
	})})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", io.MultiReader(strings.NewReader("data")))
	req.Trailer = http.Header{"X-Check": {"42"}}
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "body" || resp.Trailer.Get("X-Sum") != "got 42" {
		t.Errorf("body %q, trailers %v", b, resp.Trailer)
	}
}

// rawConn is a client that speaks frames, for what a well-behaved client
// never does.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &rawConn{t: t, c: c, fr: http2.NewFramer(c, c)}
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	r.enc = hpack.NewEncoder(&r.buf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return r
}

// request opens stream id with a GET of path, ending the client's side.
func (r *rawConn) request(id uint32, path string) {
	r.buf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":path", path}, {":authority", "test"}} {
		_ = r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.buf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		r.t.Fatal(err)
	}
}

// next reads frames until one that f accepts.
func (r *rawConn) next(f func(http2.Frame) bool) http2.Frame {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		fr, err := r.fr.ReadFrame()
		if err != nil {
			r.t.Fatal(err)
		}
		if f(fr) {
			return fr
		}
	}
}

// Past MaxConcurrentStreams a stream is refused; once a stream ends, the
// next one is served.
func TestStreamLimit(t *testing.T) {
	release := make(chan struct{})
	addr := serveTest(t, &Server{MaxConcurrentStreams: 2, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			<-release
		}
	})})
	r := dialRaw(t, addr)
	r.request(1, "/wait")
	r.request(3, "/wait")
	r.request(5, "/wait")
	rst := r.next(func(f http2.Frame) bool { _, ok := f.(*http2.RSTStreamFrame); return ok }).(*http2.RSTStreamFrame)
	if rst.StreamID != 5 || rst.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("got %v, want stream 5 refused", rst)
	}
	close(release)
	r.request(7, "/")
	r.next(func(f http2.Frame) bool {
		h, ok := f.(*http2.MetaHeadersFrame)
		return ok && h.StreamID == 7 && h.PseudoValue("status") == "200"
	})
}

// A client's RST_STREAM cancels the handler's context.
func TestResetCancelsHandler(t *testing.T) {
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		cancelled <- r.Context().Err()
	})})
	r := dialRaw(t, addr)
	r.request(1, "/")
	<-started
	if err := r.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context ended with %v", err)
	}
}

// A body read past the handler's read deadline fails with
// os.ErrDeadlineExceeded, as net/http's does.
func TestReadDeadline(t *testing.T) {
	got := make(chan error, 1)
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(-time.Second))
		_, err := r.Body.Read(make([]byte, 1))
		got <- err
	})})
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", pr)
	go func() {
		if resp, err := h2cClient().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if err := <-got; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
}

// Shutdown lets a running stream end, then the connection closes.
func TestShutdownWaitsForStreams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	started, release := make(chan struct{}), make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			s.ServeConn(c)
		}
	}()
	r := dialRaw(t, ln.Addr().String())
	r.request(1, "/")
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	r.next(func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok })
	close(release)
	d := r.next(func(f http2.Frame) bool { _, ok := f.(*http2.DataFrame); return ok }).(*http2.DataFrame)
	if string(d.Data()) != "done" || !d.StreamEnded() {
		t.Errorf("DATA %q, end %v", d.Data(), d.StreamEnded())
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// appendField's representations decode, by x/net's decoder, to the fields
// encoded: statuses in the static table and not, names in it and not,
// lengths past each prefix, fields never to be indexed.
func TestHeaderEncoding(t *testing.T) {
	fields := []hpack.HeaderField{
		{Name: ":status", Value: "200"}, {Name: ":status", Value: "503"}, {Name: ":status", Value: "418"},
		{Name: "content-type", Value: "application/json"}, {Name: "retry-after", Value: "1"},
		{Name: "x-" + strings.Repeat("n", 300), Value: strings.Repeat("v", 70000)},
		{Name: "www-authenticate", Value: ""}, {Name: "set-cookie", Value: "a=b", Sensitive: true},
		{Name: "authorization", Value: "Bearer k", Sensitive: true},
	}
	var b []byte
	for _, f := range fields {
		b = appendField(b, f.Name, f.Value)
	}
	got, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fields) {
		t.Fatalf("decoded %d fields, want %d", len(got), len(fields))
	}
	for i := range fields {
		if got[i] != fields[i] {
			t.Errorf("field %d: decoded %.40v, want %.40v", i, got[i], fields[i])
		}
	}
}

// wrapped is a connection the way the front hands one over: wrapped,
// with NetConn giving what is beneath.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// A request on a TLS connection, however wrapped, carries its TLS state.
func TestTLSStateThroughWrappers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if tlsState(wrapped{wrapped{tls.Server(a, &tls.Config{})}}) == nil {
		t.Error("no TLS state through two wrappers")
	}
	if tlsState(wrapped{a}) != nil {
		t.Error("TLS state for a plain connection")
	}
}

// Streams answered before the client sent their bodies are reset with
// NO_ERROR, and the DATA the client sends on them afterwards is ignored,
// not answered with STREAM_CLOSED resets (which the front's rapid-reset
// guard counts against the client): for as many streams as the limit
// allows at once.
func TestDataAfterAnswerIgnored(t *testing.T) {
	addr := serveTest(t, &Server{MaxConcurrentStreams: 100, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})})
	r := dialRaw(t, addr)
	const streams = 100
	for i := range uint32(streams) {
		r.buf.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/"}, {":authority", "test"}} {
			_ = r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2*i + 1, BlockFragment: r.buf.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	for answered := 0; answered < streams; {
		f := r.next(func(http2.Frame) bool { return true })
		if rst, ok := f.(*http2.RSTStreamFrame); ok {
			if rst.ErrCode != http2.ErrCodeNo {
				t.Fatalf("stream %d reset with %v", rst.StreamID, rst.ErrCode)
			}
			answered++
		}
	}
	for i := range uint32(streams) {
		if err := r.fr.WriteData(2*i+1, true, []byte("late body")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	r.next(func(f http2.Frame) bool {
		if rst, ok := f.(*http2.RSTStreamFrame); ok {
			t.Errorf("DATA after the answer drew a reset of stream %d: %v", rst.StreamID, rst.ErrCode)
		}
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck()
	})
}

// A connection that falls silent is sent a PING; one that answers lives
// on, one that stays silent is closed.
func TestSilentConnectionPingedThenClosed(t *testing.T) {
	addr := serveTest(t, &Server{PingAfter: 20 * time.Millisecond, PingTimeout: 20 * time.Millisecond,
		Handler: http.NotFoundHandler()})
	r := dialRaw(t, addr)
	p := r.next(func(f http2.Frame) bool {
		p, ok := f.(*http2.PingFrame)
		return ok && !p.IsAck()
	}).(*http2.PingFrame)
	if err := r.fr.WritePing(true, p.Data); err != nil {
		t.Fatal(err)
	}
	r.next(func(f http2.Frame) bool { // pinged again once silent again
		p, ok := f.(*http2.PingFrame)
		return ok && !p.IsAck()
	})
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, err := r.fr.ReadFrame(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the silent connection is still open")
			}
			return // closed
		}
	}
}
