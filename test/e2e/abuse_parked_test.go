package e2e

import (
	"bytes"
	"net"
	"net/http"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestAbuseParkedHoldNoPlace: with the bound on requests in progress at
// its default, many more event streams than the bound wait at once,
// each on a connection of its own, and a request still gets its answer
// rather than 503: a waiting stream gives back its place. Requests that
// stall while working (their reader takes nothing) do hold theirs, and
// past the bound a request is shed.
func TestAbuseParkedHoldNoPlace(t *testing.T) {
	s := start(t, t.TempDir())
	bound := int(metric(t, s, `surge_front_limit{limit="max_requests"}`))
	if bound <= 0 {
		t.Fatalf("max_requests %d by default, want a bound", bound)
	}
	for range bound + 64 {
		holdEventStream(t, s)
	}
	oneShot := clientFrom("127.0.0.1")
	if status, body := getFrom(t, oneShot, s.url+"/metrics"); status != http.StatusOK {
		t.Fatalf("a request with %d event streams open and a bound of %d: %d %s", bound+64, bound, status, body[:min(len(body), 300)])
	}
	stallResponses(t, s, bound)
	resp, err := oneShot.Get(s.url + "/v1/accounts/parked-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	wantOverloaded(t, resp, b.Bytes())
}

// stallResponses takes n places among the requests in progress: it asks
// for /metrics n times over HTTP/2 connections that grant no flow-control
// window, so each handler blocks writing its reply, and returns the
// connections once each reply's headers came; they close with the test.
func stallResponses(t *testing.T, s *server, n int) []net.Conn {
	t.Helper()
	const perConn = 100 // under --max-streams
	var conns []net.Conn
	for n > 0 {
		k := min(n, perConn)
		conns = append(conns, stalledConn(t, s, k))
		n -= k
	}
	return conns
}

func stalledConn(t *testing.T, s *server, streams int) net.Conn {
	t.Helper()
	c, _ := dialRaw(t, s.url)
	t.Cleanup(func() { _ = c.Close() })
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := range streams {
		block.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "surge"}, {":path", "/metrics"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	for answered := 0; answered < streams; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("stalled replies: %d of %d headers: %v", answered, streams, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "200" {
				t.Fatalf("stalled reply %d: status %s, want 200", f.StreamID, st)
			}
			answered++
		case *http2.RSTStreamFrame:
			t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v after %d streams", f.ErrCode, answered)
		}
	}
	return c
}
