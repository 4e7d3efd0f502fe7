package kvapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/store"
)

// testServer is a Handler served by the real front door.
type testServer struct {
	URL    string
	client *http.Client
}

func (s *testServer) Client() *http.Client { return s.client }

// newServer serves a Handler over real HTTP on a fresh store: /v0/entity
// natively on fasthttp, the rest on net/http, as surge serve does.
func newServer(t testing.TB, o Options) *testServer {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o.Registry = prometheus.NewRegistry()
	h := New(kvstore.New(db, o.Registry), o)
	netHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Owns(r.URL.Path) {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := front.New(front.Options{
		Routes: h.FastRoutes(), Net: netHandler, SlowPrefixes: []string{"/v0/entities"},
		MaxRequestBodyBytes: 1 << 20, HeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("serve: %v", err)
		}
		db.Close()
	})
	return &testServer{URL: "http://" + ln.Addr().String(), client: client}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func do(t testing.TB, srv *testServer, method, target string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+target, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func want(t testing.TB, r reply, status int, body string) {
	t.Helper()
	if r.status != status || (body != "*" && string(r.body) != body) {
		t.Errorf("got %d %q, want %d %q", r.status, r.body, status, body)
	}
}

func TestEntityLifecycle(t *testing.T) {
	srv := newServer(t, Options{})
	want(t, do(t, srv, "GET", "/v0/entity?id=k", nil), 404, "")
	want(t, do(t, srv, "DELETE", "/v0/entity?id=k", nil), 202, "")
	want(t, do(t, srv, "PUT", "/v0/entity?id=k", strings.NewReader("v1")), 201, "")
	want(t, do(t, srv, "PUT", "/v0/entity?id=k", strings.NewReader("v2")), 201, "")
	r := do(t, srv, "GET", "/v0/entity?id=k", nil)
	want(t, r, 200, "v2")
	if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	want(t, do(t, srv, "PUT", "/v0/entity?id=k", strings.NewReader("")), 201, "")
	want(t, do(t, srv, "GET", "/v0/entity?id=k", nil), 200, "")
	want(t, do(t, srv, "DELETE", "/v0/entity?id=k", nil), 202, "")
	want(t, do(t, srv, "GET", "/v0/entity?id=k", nil), 404, "")
}

func TestBinaryValuesAndEscapedKeys(t *testing.T) {
	srv := newServer(t, Options{})
	value := []byte{0, 0xff, '\n', '\r', 0x80, 0}
	want(t, do(t, srv, "PUT", "/v0/entity?id=a%20b%2Bc&from=2&ack=1", bytes.NewReader(value)), 201, "")
	want(t, do(t, srv, "GET", "/v0/entity?id=a+b%2bc", nil), 200, string(value))
	want(t, do(t, srv, "GET", "/v0/entity?ack=1&id=%D0%BA", nil), 404, "")
}

func TestRefusals(t *testing.T) {
	srv := newServer(t, Options{MaxValueBytes: 8})
	cases := []struct {
		method, target, body string
		status               int
	}{
		{"GET", "/v0/entity", "", 400},
		{"GET", "/v0/entity?id=", "", 400},
		{"PUT", "/v0/entity?id=", "x", 400},
		{"DELETE", "/v0/entity?idx=k", "", 400},
		{"GET", "/v0/entity?id=%zz", "", 400},
		{"GET", "/v0/entity?id=%FF", "", 400},
		{"GET", "/v0/entity?id=a%0Ab", "", 400},
		{"GET", "/v0/entity?id=" + strings.Repeat("k", kv.MaxKeyBytes+1), "", 400},
		{"POST", "/v0/entity?id=k", "v", 405},
		{"PATCH", "/v0/entity?id=k", "v", 405},
		{"HEAD", "/v0/entity?id=k", "", 405},
		{"GET", "/v0/abracadabra", "", 400},
		{"GET", "/v0", "", 400},
		{"GET", "/v0/", "", 400},
		{"GET", "/v0/entity/", "", 400},
		{"GET", "/v0/entities", "", 400},
		{"GET", "/v0/entities?end=end", "", 400},
		{"GET", "/v0/entities?start=&end=", "", 400},
		{"GET", "/v0/entities?start=a&end=", "", 400},
		{"PUT", "/v0/entities?start=a", "", 405},
		{"PUT", "/v0/entity?id=k", "123456789", 413},
		{"GET", "/abracadabra", "", http.StatusTeapot}, // not ours: the fallback's
	}
	for _, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		r := do(t, srv, c.method, c.target, body)
		if r.status != c.status {
			t.Errorf("%s %s: got %d %q, want %d", c.method, c.target, r.status, r.body, c.status)
		}
	}
	want(t, do(t, srv, "GET", "/v0/entity?id=k", nil), 404, "") // nothing refused was stored
	if r := do(t, srv, "POST", "/v0/entity?id=k", nil); r.header.Get("Allow") != "GET, PUT, DELETE" {
		t.Errorf("405 Allow = %q", r.header.Get("Allow"))
	}
}

// TestValueLimitUnknownLength sends values with chunked transfer encoding,
// so the limit is found while reading, not from Content-Length.
func TestValueLimitUnknownLength(t *testing.T) {
	srv := newServer(t, Options{MaxValueBytes: 8})
	for _, c := range []struct{ size, status int }{{0, 201}, {9, 413}, {100000, 413}, {8, 201}} {
		body := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), c.size))) // hides the length
		r := do(t, srv, "PUT", "/v0/entity?id=k", body)
		if r.status != c.status {
			t.Errorf("%d-byte value of unknown length: %d %q, want %d", c.size, r.status, r.body, c.status)
		}
	}
	want(t, do(t, srv, "GET", "/v0/entity?id=k", nil), 200, "xxxxxxxx")
}

func TestAuthorize(t *testing.T) {
	srv := newServer(t, Options{Authorize: func(auth string) bool { return auth == "Bearer k" }})
	r := do(t, srv, "PUT", "/v0/entity?id=k", strings.NewReader("v"))
	want(t, r, 401, "*")
	if r.header.Get("Www-Authenticate") != "Bearer" {
		t.Errorf("401 without a Bearer challenge: %v", r.header)
	}
	req, _ := http.NewRequest("PUT", srv.URL+"/v0/entity?id=k", strings.NewReader("v"))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Errorf("authorized PUT: %d", resp.StatusCode)
	}
}

func TestRangeStreamsInKeyOrder(t *testing.T) {
	srv := newServer(t, Options{})
	for _, k := range []string{"r3", "r2", "r1", "q", "s"} {
		want(t, do(t, srv, "PUT", "/v0/entity?id="+k, strings.NewReader("v"+k)), 201, "")
	}
	want(t, do(t, srv, "DELETE", "/v0/entity?id=r2", nil), 202, "")
	want(t, do(t, srv, "GET", "/v0/entities?start=r0&end=r9", nil), 200, "r1\nvr1r3\nvr3")
	want(t, do(t, srv, "GET", "/v0/entities?start=r1&end=r3", nil), 200, "r1\nvr1")
	want(t, do(t, srv, "GET", "/v0/entities?start=r3", nil), 200, "r3\nvr3s\nvs")
	want(t, do(t, srv, "GET", "/v0/entities?start=r3&end=r1", nil), 200, "")
	want(t, do(t, srv, "GET", "/v0/entities?start=t", nil), 200, "")

	req, _ := http.NewRequest("GET", srv.URL+"/v0/entities?start=q", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("range reply's transfer encoding %v, want chunked", resp.TransferEncoding)
	}
}

// TestLargeValueInRange checks an entry larger than net/http's response
// buffer.
func TestLargeValueInRange(t *testing.T) {
	srv := newServer(t, Options{})
	big := bytes.Repeat([]byte("0123456789"), 1000)
	want(t, do(t, srv, "PUT", "/v0/entity?id=big", bytes.NewReader(big)), 201, "")
	want(t, do(t, srv, "PUT", "/v0/entity?id=bih", strings.NewReader("small")), 201, "")
	want(t, do(t, srv, "GET", "/v0/entities?start=big", nil), 200, "big\n"+string(big)+"bih\nsmall")
	want(t, do(t, srv, "GET", "/v0/entity?id=big", nil), 200, string(big))
}
