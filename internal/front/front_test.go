package front

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// testServer serves one native route, GET|POST /native/{id}, which
// answers which server read the request, and a net/http handler for
// everything else that does the same; /slow/ connections go to net/http,
// and connections that open with a gRPC call to a grpc-go server of
// grpc.health.v1.
func testServer(t *testing.T) string {
	t.Helper()
	native := func(ctx *fasthttp.RequestCtx) {
		via := "fasthttp"
		if Context(ctx) != context.Context(ctx) {
			via = "net/http" // NetHandler gave it the net/http request's context
		}
		ctx.Response.Header.Set("X-Id", PathValue(ctx, "id"))
		ctx.Response.Header.Set("X-Client", ctx.RemoteAddr().String())
		ctx.SetStatusCode(http.StatusCreated)
		fmt.Fprintf(ctx, "native %s via %s body=%q", ctx.Method(), via, ctx.PostBody())
	}
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("a bug")
		}
		fmt.Fprintf(w, "net %s %s proto=%d", r.Method, r.URL.Path, r.ProtoMajor)
	})
	grpcSrv := grpc.NewServer()
	healthpb.RegisterHealthServer(grpcSrv, health.NewServer())
	srv := New(Options{
		GRPC:                grpcSrv,
		Routes:              []Route{{Pattern: "/native/{id}", Handler: native}, {Pattern: "PUT /panic-native", Handler: func(*fasthttp.RequestCtx) { panic("a native bug") }}},
		Net:                 rest,
		SlowPrefixes:        []string{"/slow/"},
		MaxRequestBodyBytes: 1 << 10,
		HeaderTimeout:       5 * time.Second,
		IdleTimeout:         time.Minute,
	})
	return "http://" + serveFront(t, srv)
}

func get(t *testing.T, c *http.Client, method, url, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func TestHTTP1RoutesNativeAndFallback(t *testing.T) {
	url := testServer(t)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	status, body, hdr := get(t, c, "POST", url+"/native/abc", "hi")
	if status != http.StatusCreated || body != `native POST via fasthttp body="hi"` || hdr.Get("X-Id") != "abc" {
		t.Errorf("native route: %d %q id %q", status, body, hdr.Get("X-Id"))
	}
	// The same keep-alive connection, a path with no native route.
	if status, body, _ := get(t, c, "GET", url+"/other", ""); status != http.StatusOK || body != "net GET /other proto=1" {
		t.Errorf("fallback: %d %q", status, body)
	}
	for _, path := range []string{"/native/", "/native/a/b", "/native"} {
		if _, body, _ := get(t, c, "GET", url+path, ""); !strings.HasPrefix(body, "net ") {
			t.Errorf("%s matched the native route: %q", path, body)
		}
	}
}

func TestSlowFirstRequestGoesToNetHTTP(t *testing.T) {
	url := testServer(t)
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	if _, body, _ := get(t, c, "GET", url+"/slow/x", ""); body != "net GET /slow/x proto=1" {
		t.Errorf("slow path: %q", body)
	}
	// One connection, now net/http's: the native route reaches its handler
	// through NetHandler.
	status, body, hdr := get(t, c, "POST", url+"/native/xyz", "b")
	if status != http.StatusCreated || body != `native POST via net/http body="b"` || hdr.Get("X-Id") != "xyz" {
		t.Errorf("native route on a net/http connection: %d %q id %q", status, body, hdr.Get("X-Id"))
	}
}

// TestHTTP2PriorKnowledge also checks that the connection lives on: the
// sniffer's SETTINGS, acknowledged by the client, must not make net/http
// hang up (the transport would redial and hide it). The server names the
// client connection each request came on. Counting the client's dials
// instead would be flaky: net/http may dial a spare connection when a
// request starts before the first connection is back in its pool.
func TestHTTP2PriorKnowledge(t *testing.T) {
	url := testServer(t)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	if _, body, _ := get(t, c, "GET", url+"/other", ""); body != "net GET /other proto=2" {
		t.Errorf("h2c fallback: %q", body)
	}
	clients := map[string]int{}
	for i := range 20 {
		status, body, hdr := get(t, c, "PUT", url+"/native/1", "x")
		if status != http.StatusCreated || body != `native PUT via net/http body="x"` {
			t.Errorf("h2c native route, request %d: %d %q", i, status, body)
		}
		clients[hdr.Get("X-Client")]++
	}
	if len(clients) != 1 {
		t.Errorf("20 requests came on %d connections, want 1: %v", len(clients), clients)
	}
}

// TestGRPCConnectionsGoToGRPCServer calls a grpc-go client, which waits
// for the server's SETTINGS before its first request, next to an h2c
// client whose first request is gRPC-Web: each reaches its own server.
func TestGRPCConnectionsGoToGRPCServer(t *testing.T) {
	url := testServer(t)
	cc, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(url, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for range 3 { // one connection, several calls
		res, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("gRPC health check: %v %v", res, err)
		}
	}
	// A request far past the first stream window and frame size crosses
	// the opening the front made for grpc-go (h2open.go).
	_, err = healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: strings.Repeat("s", 1<<20)})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("a 1 MiB health check: %v, want NotFound (an unknown service)", err)
	}

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest("POST", url+"/grpc.health.v1.Health/Check", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc-web+proto")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "net POST /grpc.health.v1.Health/Check proto=2" {
		t.Errorf("gRPC-Web over h2c reached %q, want net/http", b)
	}
}

func TestPanicsAnswer500AndServerLivesOn(t *testing.T) {
	url := testServer(t)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	for _, r := range []struct{ method, path string }{{"PUT", "/panic-native"}, {"GET", "/panic"}} {
		if status, _, _ := get(t, c, r.method, url+r.path, ""); status != http.StatusInternalServerError {
			t.Errorf("%s %s: status %d, want 500", r.method, r.path, status)
		}
	}
	if status, _, _ := get(t, c, "GET", url+"/native/ok", ""); status != http.StatusCreated {
		t.Errorf("after the panics: %d", status)
	}
}

func TestOversizedBodyRefused(t *testing.T) {
	url := testServer(t)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	status, _, _ := get(t, c, "POST", url+"/native/big", strings.Repeat("x", 2<<10))
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over MaxRequestBodyBytes: %d, want 413", status)
	}
}

// TestSniffSplitRequestLine sends the first request line a byte at a time:
// routing waits for the path.
func TestSniffSplitRequestLine(t *testing.T) {
	url := testServer(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET /slow/split HTTP/1.1\r\nHost: x\r\n\r\n"
	for i := range len(req) {
		if _, err := conn.Write([]byte{req[i]}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "net GET /slow/split proto=1" {
		t.Errorf("split request line: %q", b)
	}
}

// TestFallbackRequestOutlivesTheNextOne: what a net/http handler keeps of a
// request that reached it through fasthttp (its path, a header) stays as
// it was after the next request on the same connection reuses fasthttp's
// buffers.
func TestFallbackRequestOutlivesTheNextOne(t *testing.T) {
	var kept []string
	var mu sync.Mutex
	srv := New(Options{
		Net: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			kept = append(kept, r.URL.Path, r.Header.Get("X-Note"), r.URL.Query().Get("q"))
			mu.Unlock()
		}),
		HeaderTimeout: 5 * time.Second,
		IdleTimeout:   time.Minute,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	var want []string
	for i := range 3 {
		path, note, q := fmt.Sprintf("/first-%d", i), fmt.Sprintf("note-%d", i), fmt.Sprintf("query-%d", i)
		req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+path+"?q="+q, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Note", note)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want = append(want, path, note, q)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
}
