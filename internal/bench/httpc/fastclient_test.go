package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/benchtest"
)

// countedServer is an httptest.Server (net/http's own server) that counts
// the connections it accepted and remembers the last one.
type countedServer struct {
	*httptest.Server
	conns atomic.Int32
	mu    sync.Mutex
	last  net.Conn
}

func startCounted(t *testing.T, h http.Handler) *countedServer {
	t.Helper()
	s := &countedServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
			s.mu.Lock()
			s.last = c
			s.mu.Unlock()
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *countedServer) lastConn() net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func newTestClient(t *testing.T, o HTTPOptions) *HTTPClient {
	t.Helper()
	c, err := NewHTTPClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // runs before the server's Close, registered earlier
	return c
}

func sendString(t *testing.T, ep *Endpoint, body string) (int, string) {
	t.Helper()
	status, reply, err := ep.Send(append(ep.Body(), body...))
	if err != nil {
		t.Fatalf("send %q: %v", body, err)
	}
	return status, string(reply)
}

func TestFastContentLength(t *testing.T) {
	var seen []string // one client, one request at a time
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, fmt.Sprintf("%s %s host=%s type=%q auth=%q len=%d te=%v body=%s",
			r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("Content-Type"), r.Header.Get("Authorization"),
			r.ContentLength, r.TransferEncoding, b))
		if r.URL.Path == "/base/big" {
			_, _ = w.Write([]byte(strings.Repeat("0123456789", 10_000))) // larger than the read buffer
			return
		}
		fmt.Fprintf(w, "echo %s", b)
	}))
	c := newTestClient(t, HTTPOptions{Target: srv.URL + "/base/", APIKey: "k3y", Conns: 1})
	ep := c.Endpoint(context.Background(), http.MethodPost, "/x")
	for _, body := range []string{`{"n":1}`, `{"n":22}`, ""} {
		if status, reply := sendString(t, ep, body); status != 200 || reply != "echo "+body {
			t.Errorf("POST %q: %d %q", body, status, reply)
		}
	}
	status, reply, err := c.Do(context.Background(), http.MethodGet, "/big", nil)
	if err != nil || status != 200 || string(reply) != strings.Repeat("0123456789", 10_000) {
		t.Errorf("GET /big: %d, %d bytes, %v", status, len(reply), err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := []string{
		`POST /base/x host=` + host + ` type="application/json" auth="Bearer k3y" len=7 te=[] body={"n":1}`,
		`POST /base/x host=` + host + ` type="application/json" auth="Bearer k3y" len=8 te=[] body={"n":22}`,
		`POST /base/x host=` + host + ` type="application/json" auth="Bearer k3y" len=0 te=[] body=`,
		`GET /base/big host=` + host + ` type="" auth="Bearer k3y" len=0 te=[] body=`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("server saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	// Do borrowed a connection; the Endpoint had released none, so Do
	// dialled its own. Each kept its connection alive.
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the Endpoint's and Do's)", n)
	}
	if c.BytesSent() <= int64(len(`{"n":1}{"n":22}`)) || c.BytesReceived() <= 100_000 {
		t.Errorf("wire counts: sent %d received %d", c.BytesSent(), c.BytesReceived())
	}
}

// TestFastChunked checks replies that net/http's server chunks because
// the handler flushed before it was done.
func TestFastChunked(t *testing.T) {
	parts := []string{"first ", strings.Repeat("x", 40_000), "", " last"}
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/problem" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"code":"conflict",`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `"detail":"chunked problem"}`)
			return
		}
		for _, p := range parts {
			_, _ = io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}))
	// The premise: net/http really chunks these replies.
	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(raw, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil || fmt.Sprint(resp.TransferEncoding) != "[chunked]" {
		t.Fatalf("server did not chunk: %v %v", resp, err)
	}
	raw.Close()

	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
	ep := c.Endpoint(context.Background(), http.MethodPost, "/")
	for range 3 {
		if status, reply := sendString(t, ep, "{}"); status != 200 || reply != strings.Join(parts, "") {
			t.Fatalf("chunked reply: %d, %d bytes", status, len(reply))
		}
	}
	status, reply := sendString(t, c.Endpoint(context.Background(), http.MethodPost, "/problem"), "{}")
	if key := StatusKey(status, []byte(reply)); key != "409 conflict" || ProblemDetail([]byte(reply)) != "chunked problem" {
		t.Errorf("chunked problem: %s %q", key, reply)
	}
}

func TestFastErrorStatuses(t *testing.T) {
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/422":
			benchtest.Problem(w, 422, "insufficient_funds")
		case "/503":
			benchtest.Problem(w, 503, "overloaded")
		case "/404":
			http.NotFound(w, r)
		case "/500":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
	for _, tc := range []struct{ path, key, detail string }{
		{"/422", "422 insufficient_funds", "injected insufficient_funds"},
		{"/503", "503 overloaded", "injected overloaded"},
		{"/404", "404", "404 page not found\n"},
		{"/500", "500", "boom\n"},
		{"/204", "204", ""},
	} {
		ep := c.Endpoint(context.Background(), http.MethodPost, tc.path)
		status, reply := sendString(t, ep, `{"a":1}`)
		if key := StatusKey(status, []byte(reply)); key != tc.key || ProblemDetail([]byte(reply)) != tc.detail {
			t.Errorf("%s: key %q detail %q, want %q %q", tc.path, key, ProblemDetail([]byte(reply)), tc.key, tc.detail)
		}
		ep.Close() // the next Endpoint takes over the connection
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 replies, want 1: error replies keep the connection", n)
	}
}

// TestFastReusesBuffers checks that the body buffer comes back after any
// reply, error replies included: the fast client has finished writing
// the request when Send returns.
func TestFastReusesBuffers(t *testing.T) {
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
	ep := c.Endpoint(context.Background(), http.MethodPost, "/fail")
	first := append(ep.Body(), "a body"...)
	if status, _, err := ep.Send(first); err != nil || status != 503 {
		t.Fatalf("%d %v", status, err)
	}
	if b := append(ep.Body(), "next"...); &b[0] != &first[0] {
		t.Error("body buffer not reused after a 503")
	}
}

func TestFastReconnectsAfterConnectionClose(t *testing.T) {
	var requests atomic.Int32
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if requests.Add(1) == 1 {
			w.Header().Set("Connection", "close")
		}
		fmt.Fprintf(w, "reply %d", requests.Load())
	}))
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
	ep := c.Endpoint(context.Background(), http.MethodPost, "/")
	for i := 1; i <= 3; i++ {
		if status, reply := sendString(t, ep, "{}"); status != 200 || reply != fmt.Sprintf("reply %d", i) {
			t.Fatalf("request %d: %d %q", i, status, reply)
		}
	}
	if n, r := srv.conns.Load(), requests.Load(); n != 2 || r != 3 {
		t.Errorf("%d connections and %d requests, want 2 and 3", n, r)
	}
}

// hijackServer answers the first request by writing first, raw, and
// closing the connection; later requests get a normal "ok". It reads the
// whole request before closing, so that the close sends a FIN, not a
// reset for unread data.
func hijackServer(t *testing.T, first string) (*countedServer, *atomic.Int32) {
	var requests atomic.Int32
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if requests.Add(1) > 1 {
			fmt.Fprint(w, "ok")
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = buf.WriteString(first)
		_ = buf.Flush()
		_ = conn.Close()
	}))
	return srv, &requests
}

// TestFastBrokenReplies: the server closes the connection before the reply
// is complete, or sends garbage. Each is one failed request, counted
// under its key, never a hang and never a resend; the next request gets
// a new connection.
func TestFastBrokenReplies(t *testing.T) {
	for _, tc := range []struct {
		name, raw, key string
		malformed      bool
	}{
		{"closed before the reply", "", "error eof", false},
		{"closed mid head", "HTTP/1.1 200 OK\r\nContent-Le", "error eof", false},
		{"closed mid content", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", "error eof", false},
		{"closed mid chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", "error eof", false},
		{"closed before the last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", "error eof", false},
		{"malformed status line", "HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n", "error other", true},
		{"not http", "220 smtp.example.com ESMTP\r\n", "error other", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := hijackServer(t, tc.raw)
			c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
			ep := c.Endpoint(context.Background(), http.MethodPost, "/")
			_, _, err := ep.Send(append(ep.Body(), "{}"...))
			if err == nil {
				t.Fatal("a broken reply was accepted")
			}
			if key := ErrorKey(err); key != tc.key || errors.Is(err, errMalformed) != tc.malformed {
				t.Errorf("error %v: key %q malformed %v, want %q %v", err, key, errors.Is(err, errMalformed), tc.key, tc.malformed)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1: a written request must not be resent", n)
			}
			if status, reply := sendString(t, ep, "{}"); status != 200 || reply != "ok" {
				t.Errorf("next request: %d %q", status, reply)
			}
			if n := srv.conns.Load(); n != 2 {
				t.Errorf("%d connections, want 2", n)
			}
		})
	}
}

func TestFastTimeout(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int32
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			<-release // never answers in time
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for the handler
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1, Timeout: 10 * time.Millisecond})
	ep := c.Endpoint(context.Background(), http.MethodPost, "/")
	_, _, err := ep.Send(append(ep.Body(), "{}"...))
	if key := ErrorKey(err); key != "error timeout" {
		t.Fatalf("err %v: key %q, want error timeout", err, key)
	}
	// The next request gets all the time it needs: what is checked is
	// that the Endpoint recovers, not how fast a busy machine answers.
	c.targets[0].fast.timeout = time.Minute
	if status, reply := sendString(t, ep, "{}"); status != 200 || reply != "ok" {
		t.Errorf("next request: %d %q", status, reply)
	}
}

// TestFastCancel: ending the Endpoint's context fails the request in
// flight at once, as net/http does, whatever the timeout.
func TestFastCancel(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ep := c.Endpoint(ctx, http.MethodPost, "/")
	go func() {
		<-entered
		cancel()
	}()
	if _, _, err := ep.Send(append(ep.Body(), "{}"...)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, _, err := ep.Send(ep.Body()); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: err = %v, want context.Canceled", err)
	}
}

func TestFastRefusesWhatItCannotDo(t *testing.T) {
	for _, o := range []HTTPOptions{
		{Target: "https://127.0.0.1:1"},
		{Target: "http://127.0.0.1:1", APIKey: "a\r\nX-Injected: 1"},
		{Target: "http://127.0.0.1:1", Client: "curl"},
	} {
		if _, err := NewHTTPClient(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := NewHTTPClient(HTTPOptions{Target: "https://127.0.0.1:1", Client: StdClient}); err != nil {
		t.Errorf("std client refused https: %v", err)
	}
	c := newTestClient(t, HTTPOptions{Target: "http://127.0.0.1:1"})
	c.Close()
	if _, _, err := c.Do(context.Background(), http.MethodGet, "/", nil); !errors.Is(err, errClientClosed) {
		t.Errorf("closed client: %v", err)
	}
}

// TestFastAllocs checks that a request costs the fast client no
// allocation, for a Content-Length reply, a chunked one and a problem.
// The server is net/http's, run by this test binary in a child process
// (TestFastAllocsServerProcess): in this process its allocations would
// count too, since AllocsPerRun counts the whole process's.
func TestFastAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	url := startServerProcess(t)
	for _, kind := range []ClientKind{FastClient, StdClient, FastHTTPClient} {
		c := newTestClient(t, HTTPOptions{Target: url, Conns: 1, Client: kind})
		for _, path := range []string{"/ok", "/chunked", "/problem"} {
			ep := c.Endpoint(context.Background(), http.MethodPost, path)
			send := func() {
				body := append(ep.Body(), `{"id":"r-1-123","from":"bench-1","to":"bench-2","amount":100}`...)
				if status, reply, err := ep.Send(body); err != nil || status/100 == 1 || len(reply) == 0 {
					panic(fmt.Sprintf("%s: %d %q %v", path, status, reply, err))
				}
			}
			send() // dial, size the buffers
			allocs := testing.AllocsPerRun(200, send)
			switch {
			case kind != FastClient:
				t.Logf("%s client, %s: %.0f allocations a request", kind, path, allocs)
			case allocs != 0:
				t.Errorf("fast client, %s: %.1f allocations a request, want 0", path, allocs)
			}
			ep.Close()
		}
	}
}

const serverProcessEnv = "SURGE_BENCH_TEST_SERVER_PROCESS"

// TestFastAllocsServerProcess is not a test: run by TestFastAllocs as a
// child process, it serves until its standard input closes.
func TestFastAllocsServerProcess(t *testing.T) {
	if os.Getenv(serverProcessEnv) != "1" {
		t.Skip("the server process of TestFastAllocs")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"r-1-123","from":"bench-1","to":"bench-2","amount":100,"status":"posted"}`)
		case "/chunked":
			_, _ = io.WriteString(w, `{"results":[`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"status":201}]}`)
		default:
			benchtest.Problem(w, 422, "insufficient_funds")
		}
	}))
	defer srv.Close()
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func startServerProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFastAllocsServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), serverProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the child's signal to stop
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("server process said %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return strings.TrimSpace(line)
}
