package front

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// gatedServer serves handler under limits on net/http, over HTTP/2 on
// server, its gate's waits ending after stall without progress, and
// returns its address and admission.
func gatedServer(t *testing.T, server HTTP2Server, l Limits, stall time.Duration, handler http.HandlerFunc) (string, *Admission) {
	t.Helper()
	adm := NewAdmission(l, nil)
	adm.g.gate.stall = stall
	srv := New(Options{Net: handler, Admission: adm, MaxRequestBodyBytes: 1 << 17, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, HTTP2: server})
	return serveFront(t, srv), adm
}

// h2cClient is Go's HTTP/2 client over h2c: at a connection's stream
// limit, or before its first connection is up, it dials another.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// post sends a small POST and reports its status, or the error.
func post(c *http.Client, url string) (int, error) {
	resp, err := c.Post(url, "text/plain", strings.NewReader("a body"))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// gateBlocked waits until a stream waits at the gate to be read, or
// until given up reports that none will.
func gateBlocked(h *h2gate, givenUp func() bool) {
	for !givenUp() {
		h.mu.Lock()
		n := h.blocked
		h.mu.Unlock()
		if n > 0 {
			return
		}
		runtime.Gosched()
	}
}

// TestHTTP2StreamsPastMaxRequestsWaitUnread: an HTTP/2 client with many
// more requests in flight than MaxRequests has each of them served, none
// refused, and the server reads no stream past those it has room for:
// while the handlers hold every place, the next stream waits unread (for
// as long as the stall allows, here an hour). On either HTTP/2 server.
func TestHTTP2StreamsPastMaxRequestsWaitUnread(t *testing.T) {
	onBothServers(t, streamsPastMaxRequestsWaitUnread)
}

// onBothServers runs test on each of the front's HTTP/2 servers.
func onBothServers(t *testing.T, test func(*testing.T, HTTP2Server)) {
	for _, server := range []HTTP2Server{HTTP2Surge, HTTP2Net} {
		t.Run(string(server), func(t *testing.T) { test(t, server) })
	}
}

func streamsPastMaxRequestsWaitUnread(t *testing.T, server HTTP2Server) {
	const requests, places = 12, 2
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	var entered atomic.Int32
	started := make(chan struct{}, requests)
	addr, adm := gatedServer(t, server, Limits{MaxRequests: places}, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		started <- struct{}{}
		<-release
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "served")
	})
	var clients sync.WaitGroup
	t.Cleanup(func() { // before the server's shutdown, which waits for the handlers
		releaseAll()
		clients.Wait() // their errors are reported while the test runs
	})
	c := h2cClient(t)
	statuses := make(chan int, requests)
	for range requests {
		clients.Go(func() {
			st, err := post(c, "http://"+addr+"/reserve")
			if err != nil {
				t.Error(err)
			}
			statuses <- st
		})
	}
	for range places {
		<-started
	}
	gateBlocked(adm.g.gate, func() bool { return entered.Load() > places || len(statuses) > 0 })
	adm.g.gate.mu.Lock()
	pending, waiting := adm.g.gate.pending.Load(), adm.g.gate.waiting.Load()
	adm.g.gate.mu.Unlock()
	if n := entered.Load(); n != places || pending != 0 || waiting != 0 || len(statuses) > 0 {
		t.Fatalf("with every place held: %d handlers, %d streams pending, %d waiting, %d answered; want %d, 0, 0, 0",
			n, pending, waiting, len(statuses), places)
	}
	releaseAll()
	for range requests {
		if st := <-statuses; st != http.StatusOK {
			t.Errorf("status %d, want 200", st)
		}
	}
	if n := testutil.ToFloat64(adm.g.rejected.WithLabelValues(reasonRequests)); n != 0 {
		t.Errorf("%v requests refused max_requests, want none", n)
	}
	adm.g.gate.mu.Lock()
	pending = adm.g.gate.pending.Load()
	adm.g.gate.mu.Unlock()
	if pending != 0 {
		t.Errorf("every request served: %d streams still pending, want 0", pending)
	}
}

// TestHTTP2GateWaitEnds: a stream the server has no room for, while no
// request ends, waits to be read no longer than the stall, and its
// request as long for a place; then it is refused 503 with Retry-After.
func TestHTTP2GateWaitEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	held := make(chan struct{})
	addr, adm := gatedServer(t, HTTP2Surge, Limits{MaxRequests: 1}, 50*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(held)
			<-release
		}
	})
	c := h2cClient(t)
	go func() { _, _ = post(c, "http://"+addr+"/hold") }()
	<-held
	resp, err := c.Post("http://"+addr+"/next", "text/plain", strings.NewReader("a body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a request past MaxRequests after the wait: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := testutil.ToFloat64(adm.g.rejected.WithLabelValues(reasonRequests)); n != 1 {
		t.Errorf("%v requests refused max_requests, want 1", n)
	}
	adm.g.gate.mu.Lock()
	stalled := adm.g.gate.stalled
	adm.g.gate.mu.Unlock()
	if !stalled {
		t.Error("after a wait that no place ended, the gate does not note the stall: the next request would wait again")
	}
	adm.g.gate.freed() // as the held request's end does
	adm.g.gate.mu.Lock()
	stalled = adm.g.gate.stalled
	adm.g.gate.mu.Unlock()
	if stalled {
		t.Error("a place given back does not end the stall")
	}
}

// TestHTTP2StreamBehindABodyWaitsUnread: a client may send a stream's
// HEADERS before the body of one the server has read, as Go's client
// does when it writes its requests' bodies after their headers. With
// room for one request, the first stream is served, and the second,
// whose HEADERS come between the first's headers and its body, waits
// unread while the first holds the place. On either HTTP/2 server.
func TestHTTP2StreamBehindABodyWaitsUnread(t *testing.T) {
	onBothServers(t, streamBehindABodyWaitsUnread)
}

func streamBehindABodyWaitsUnread(t *testing.T, server HTTP2Server) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	var entered atomic.Int32
	addr, adm := gatedServer(t, server, Limits{MaxRequests: 1}, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		<-release
		_, _ = io.Copy(io.Discard, r.Body)
	})
	t.Cleanup(releaseAll)
	c := dialRaw(t, addr)
	out, fr := clientOpening()
	enc := newRequestEncoder()
	for _, id := range []uint32{1, 3} {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc.encode("POST", "/reserve", "6"), EndHeaders: true})
	}
	for _, id := range []uint32{1, 3} {
		_ = fr.WriteData(id, true, []byte("a body"))
	}
	if _, err := c.Write(out.Bytes()); err != nil { // in one write: the server reads them together
		t.Fatal(err)
	}
	gate := adm.g.gate
	settled := func() bool { // the first served, and the second unread or read
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return entered.Load() > 0 && (gate.waiting.Load() > 0 || gate.blocked > 0 && gate.pending.Load() == 0)
	}
	for !settled() {
		runtime.Gosched()
	}
	gate.mu.Lock()
	blocked, pending, waiting := gate.blocked, gate.pending.Load(), gate.waiting.Load()
	gate.mu.Unlock()
	if n := entered.Load(); n != 1 || blocked == 0 || pending != 0 || waiting != 0 {
		t.Fatalf("with the place held: %d handlers, %d blocked at the gate, %d pending, %d waiting; want 1, 1, 0, 0",
			n, blocked, pending, waiting)
	}
	releaseAll()
	in := http2.NewFramer(c, c)
	in.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for id, st := range awaitEnds(t, in, 1, 3) {
		if st != "200" {
			t.Errorf("stream %d: status %s, want 200", id, st)
		}
	}
}

// TestHTTP2ParkedFramesBounded: a client that sends a parked stream more
// DATA than its windows allow, and then a PING, does not make the front
// hold it all: once the parked frames fill maxParked, the stream goes to
// the server, which ends it, and the front reads on, so the PING is
// answered, all while the one place stays held. On either HTTP/2 server.
func TestHTTP2ParkedFramesBounded(t *testing.T) {
	onBothServers(t, parkedFramesBounded)
}

func parkedFramesBounded(t *testing.T, server HTTP2Server) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	addr, _ := gatedServer(t, server, Limits{MaxRequests: 1}, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
	})
	c := dialRaw(t, addr)
	var done sync.WaitGroup
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		_ = c.Close()
		done.Wait()
	})
	out, fr := clientOpening()
	enc := newRequestEncoder()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc.encode("GET", "/hold", ""), EndHeaders: true, EndStream: true})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc.encode("POST", "/flood", ""), EndHeaders: true})
	chunk := make([]byte, defaultMaxFrameSize)
	for range 2 * maxParked / len(chunk) {
		_ = fr.WriteData(3, false, chunk)
	}
	_ = fr.WritePing(false, [8]byte{'f', 'l', 'o', 'o', 'd'})
	done.Go(func() { _, _ = c.Write(out.Bytes()) }) // the server may end the connection before it has read it all
	in := http2.NewFramer(nil, c)
	for acked, ended := false, false; !acked || !ended; {
		f, err := in.ReadFrame()
		if err != nil {
			t.Fatalf("the flood's stream ended %v, PING answered %v: %v", ended, acked, err)
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			acked = acked || f.IsAck()
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeFlowControl {
				t.Fatalf("GOAWAY %v %q, want none or FLOW_CONTROL_ERROR", f.ErrCode, f.DebugData())
			}
			return // the server answered the flood itself
		case *http2.RSTStreamFrame:
			ended = ended || f.StreamID == 3
		}
		if h := f.Header(); h.StreamID == 1 {
			t.Fatalf("the held stream answered (%v) while its place is held", h.Type)
		} else if h.StreamID == 3 && h.Flags.Has(http2.FlagDataEndStream) && (h.Type == http2.FrameData || h.Type == http2.FrameHeaders) {
			ended = true
		}
	}
}
