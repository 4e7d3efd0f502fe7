package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer is a TCP server whose test drives each accepted connection
// itself, to see exactly what arrives before it answers.
type rawServer struct {
	ln    net.Listener
	conns chan net.Conn
}

func startRaw(t *testing.T) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(s.conns)
				return
			}
			s.conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for c := range s.conns {
			_ = c.Close()
		}
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

// serve takes the next connection, reads n bodiless requests from it and
// hands their request-targets, in the order they came, to answer. It runs
// in its own goroutine, so it reports with t.Error.
func (s *rawServer) serve(t *testing.T, n int, answer func(net.Conn, []string)) {
	var c net.Conn
	select {
	case c = <-s.conns:
	case <-time.After(10 * time.Second):
		t.Error("no connection came")
		return
	}
	defer c.Close()
	br := bufio.NewReader(c)
	var targets []string
	for len(targets) < n {
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Errorf("after %d requests: %v", len(targets), err)
			return
		}
		targets = append(targets, req.RequestURI)
	}
	answer(c, targets)
}

func replyWith(c net.Conn, bodies ...string) error {
	var b strings.Builder
	for _, body := range bodies {
		fmt.Fprintf(&b, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	_, err := c.Write([]byte(b.String()))
	return err
}

// sendAll has each Endpoint send one GET at once and returns what each
// got: its reply, or its error.
func sendAll(eps []*Endpoint) []string {
	got := make([]string, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			status, reply, err := ep.SendURI(http.MethodGet, fmt.Appendf(nil, "/k/%d", i), nil)
			if err != nil {
				got[i] = "error: " + err.Error()
				return
			}
			got[i] = fmt.Sprintf("%d %s", status, reply)
		})
	}
	wg.Wait()
	return got
}

func pipelinedEndpoints(t *testing.T, target string, n, pipeline int) []*Endpoint {
	c := newTestClient(t, HTTPOptions{Target: target, Conns: n, Pipeline: pipeline})
	eps := make([]*Endpoint, n)
	for i := range eps {
		eps[i] = c.Endpoint(t.Context(), http.MethodGet, "")
	}
	return eps
}

// TestPipelineSharesOneConnection: eight Endpoints with --pipeline 8 put
// all their requests on one connection before any reply (the server
// answers none until it has all eight), and each gets the reply to its own
// request although the server answers in the order they came.
func TestPipelineSharesOneConnection(t *testing.T) {
	const n = 8
	srv := startRaw(t)
	eps := pipelinedEndpoints(t, srv.url(), n, n)
	go srv.serve(t, n, func(c net.Conn, targets []string) {
		if err := replyWith(c, targets...); err != nil { // each reply names its request
			t.Error(err)
		}
	})
	got := sendAll(eps)
	for i, g := range got {
		if want := fmt.Sprintf("200 /k/%d", i); g != want {
			t.Errorf("endpoint %d got %q, want %q", i, g, want)
		}
	}
	select {
	case c := <-srv.conns:
		t.Errorf("a second connection from %v", c.RemoteAddr())
	default:
	}
}

// TestPipelineFailsTheRestWhenClosed: the server answers the first of
// four pipelined requests and closes. The first succeeds, the others fail
// (never resent: the server may have acted on them), and the next request
// dials a new connection.
func TestPipelineFailsTheRestWhenClosed(t *testing.T) {
	const n = 4
	srv := startRaw(t)
	eps := pipelinedEndpoints(t, srv.url(), n, n)
	go srv.serve(t, n, func(c net.Conn, targets []string) {
		_ = replyWith(c, targets[0]) // and close
	})
	got := sendAll(eps)
	ok := 0
	for _, g := range got {
		switch {
		case strings.HasPrefix(g, "200 /k/"):
			ok++
		case !strings.HasPrefix(g, "error: "):
			t.Errorf("unexpected outcome %q", g)
		}
	}
	if ok != 1 {
		t.Fatalf("%d requests succeeded, want 1: %q", ok, got)
	}
	go srv.serve(t, 1, func(c net.Conn, targets []string) { _ = replyWith(c, targets...) })
	status, reply, err := eps[0].SendURI(http.MethodGet, []byte("/again"), nil)
	if err != nil || status != 200 || string(reply) != "/again" {
		t.Fatalf("after the close: %d %q %v", status, reply, err)
	}
}

// TestPipelineCancel: ending a VU's context fails its request at once even
// though the server never answers, and takes the shared connection down
// with it (a reply cannot be skipped); the other Endpoint's next request
// gets a new connection.
func TestPipelineCancel(t *testing.T) {
	srv := startRaw(t)
	c := newTestClient(t, HTTPOptions{Target: srv.url(), Conns: 2, Pipeline: 2, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	stuck := c.Endpoint(ctx, http.MethodGet, "/stuck")
	other := c.Endpoint(t.Context(), http.MethodGet, "/other")
	release := make(chan struct{})
	defer close(release)
	go srv.serve(t, 1, func(net.Conn, []string) {
		cancel()  // instead of answering
		<-release // keeping the connection open
	})
	if _, _, err := stuck.Send(nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	go srv.serve(t, 1, func(c net.Conn, targets []string) { _ = replyWith(c, targets...) })
	status, reply, err := other.Send(nil)
	if err != nil || status != 200 || string(reply) != "/other" {
		t.Fatalf("other endpoint: %d %q %v", status, reply, err)
	}
}

// TestPipelineAgainstRealServer: many VUs pipelining POSTs with bodies
// through net/http's server (which answers pipelined requests in order),
// each checking that the echo is its own.
func TestPipelineAgainstRealServer(t *testing.T) {
	for _, kind := range []ClientKind{FastClient, FastHTTPClient} {
		t.Run(string(kind), func(t *testing.T) { pipelineAgainstRealServer(t, kind) })
	}
}

func pipelineAgainstRealServer(t *testing.T, kind ClientKind) {
	srv := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		_, _ = fmt.Fprintf(&b, "%s ", r.URL.Path)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.Write(body)
		fmt.Fprint(w, b.String())
	}))
	const vus, pipeline, rounds = 24, 8, 50
	c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: vus, Pipeline: pipeline, Client: kind})
	var wg sync.WaitGroup
	for v := range vus {
		ep := c.Endpoint(t.Context(), http.MethodPost, "")
		wg.Go(func() {
			for i := range rounds {
				uri := fmt.Appendf(nil, "/vu%d", v)
				body := fmt.Appendf(ep.Body(), "round %d", i)
				status, reply, err := ep.SendURI(http.MethodPost, uri, body)
				if want := fmt.Sprintf("/vu%d round %d", v, i); err != nil || status != 200 || string(reply) != want {
					t.Errorf("vu %d round %d: %d %q %v, want %q", v, i, status, reply, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := srv.conns.Load(); n != vus/pipeline {
		t.Errorf("%d connections, want %d", n, vus/pipeline)
	}
}

func TestPipelineNeedsFastClient(t *testing.T) {
	if _, err := NewHTTPClient(HTTPOptions{Target: "http://127.0.0.1:1", Client: StdClient, Pipeline: 4}); err == nil {
		t.Fatal("--pipeline with the std client was accepted")
	}
}
