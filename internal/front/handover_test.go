package front

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestStreamOnAFastHTTPConnectionFlows sends a stream's request (a path
// under SlowPrefixes, as a browser's gRPC-Web or event stream) on a
// keep-alive connection that fasthttp serves, after a first request it
// served: the stream's headers, flushed before any message, must arrive
// while its handler waits for one, as they do on a connection net/http
// serves from the start.
func TestStreamOnAFastHTTPConnectionFlows(t *testing.T) {
	release := make(chan struct{})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Body", string(body))
		// Headers first, as a server stream before its first message.
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprintln(w, "message")
	})
	native := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("native") }
	srv := New(Options{
		Routes: []Route{{Pattern: "/native", Handler: native}}, Net: stream, SlowPrefixes: []string{"/stream"},
		MaxRequestBodyBytes: 1 << 10, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
	})
	c, err := net.Dial("tcp", serveFront(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A stalled stream fails the test at the deadline; it is no speed check.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET /native HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if got := readReply(t, r); got != "native" {
		t.Fatalf("first request: %q", got)
	}
	// The next request comes in the same write: fasthttp reads it along
	// with the stream's, and net/http must get it too.
	if _, err := io.WriteString(c, "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"+
		"GET /native HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the stream's headers did not come while it ran: %v", err)
	}
	if got := resp.Header.Get("X-Body"); got != "hello" {
		t.Fatalf("the stream's handler read the body %q, want hello", got)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "message\n" {
		t.Fatalf("the stream's message: %q, %v", rest, err)
	}
	if got := readReply(t, r); got != "native" {
		t.Fatalf("the request after the stream: %q", got)
	}
}

// readReply reads one HTTP/1.1 reply's body.
func readReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestRefusalOnAHandedOverConnection refuses a body too large for its
// route on a connection handed over to net/http, while the client is
// still sending it: the client must read the 413, not a reset. Each try
// is a new connection, since the refusal closes it.
func TestRefusalOnAHandedOverConnection(t *testing.T) {
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "stream")
	})
	native := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("native") }
	srv := New(Options{
		Routes: []Route{{Pattern: "/native", Handler: native}}, Net: stream, SlowPrefixes: []string{"/stream"},
		MaxRequestBodyBytes: 1 << 10, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
	})
	base := "http://" + serveFront(t, srv)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for try := range 20 {
		res, err := client.Get(base + "/stream") // hands the connection over
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		req, _ := http.NewRequest(http.MethodPut, base+"/native", strings.NewReader(strings.Repeat("x", 1<<20)))
		res, err = client.Do(req)
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "body_too_large") {
			t.Fatalf("try %d: status %d, body %q, %v; want 413 body_too_large", try, res.StatusCode, body, err)
		}
	}
}
