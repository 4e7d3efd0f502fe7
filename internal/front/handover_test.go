package front

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestSlowPathLaterOnAFastConnectionStreams: a keep-alive connection that
// fasthttp serves, whose second request is for a slow path, gets that
// reply streamed by net/http: its headers arrive as soon as the handler
// flushes them, before any of the body (fasthttp's adaptor holds headers
// back until the first body bytes, which a chat stream may not send for
// minutes), the request's body arrives intact, and the connection serves
// on.
func TestSlowPathLaterOnAFastConnectionStreams(t *testing.T) {
	release := make(chan struct{})
	srv := New(Options{
		Routes: []Route{{Pattern: "GET /native", Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("native") }}},
		Net: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Body", string(body))
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
			if r.URL.Path == "/slow/stream" {
				<-release
			}
			fmt.Fprintln(w, "served", r.URL.Path)
		}),
		SlowPrefixes:  []string{"/slow/"},
		HeaderTimeout: 5 * time.Second,
		IdleTimeout:   time.Minute,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer func() { _ = srv.Shutdown(context.Background()) }()
	defer free() // before Shutdown, which waits for the handler
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A bound on a broken server, which would never send the first part.
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	send := func(req string) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := send("GET /native HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(first.Body); string(b) != "native" {
		t.Fatalf("first reply %q, want native", b)
	}
	stream := send("POST /slow/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	if got := stream.Header.Get("X-Body"); got != "hello" {
		t.Errorf("the handler read the body %q, want hello", got)
	}
	free()
	if b, _ := io.ReadAll(stream.Body); string(b) != "served /slow/stream\n" {
		t.Errorf("streamed body %q", b)
	}
	after := send("GET /slow/again HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(after.Body); string(b) != "served /slow/again\n" {
		t.Errorf("the connection's next reply %q", b)
	}
}
