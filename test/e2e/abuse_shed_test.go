package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"testing"
)

// TestAbuseShedsAtOnce: with the work in progress at --max-inflight,
// requests are answered 503 overloaded with Retry-After instead of
// waiting: over HTTP/1.1 the connection is kept, over HTTP/2 only the
// stream ends, and the same connection serves again once work frees up.
// /healthz is answered throughout.
func TestAbuseShedsAtOnce(t *testing.T) {
	// A reply its reader takes nothing of is a request in its handler:
	// it holds all of --max-inflight.
	s := start(t, t.TempDir(), "--max-inflight", "1", "--max-inflight-per-client", "1")
	holder := stallResponses(t, s, 1)[0]

	rc := openRaw(t, s)
	for range 2 { // the connection is kept: a second request gets its own answer
		rc.send("GET /metrics HTTP/1.1\r\nHost: surge\r\n\r\n")
		resp, body, err := rc.reply()
		if err != nil {
			t.Fatalf("HTTP/1.1 at capacity: %v", err)
		}
		wantOverloaded(t, resp, body)
		if resp.Close {
			t.Fatal("HTTP/1.1 connection closed for a shed request")
		}
		rc.send("GET /healthz HTTP/1.1\r\nHost: surge\r\n\r\n")
		if resp, body, err := rc.reply(); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz at capacity: %v %s %v", resp, body, err)
		}
	}

	cc := h2cConn(t, s)
	resp, body := h2Get(t, cc, s.url+"/metrics")
	wantOverloaded(t, resp, body)
	_ = holder.Close() // the stream ends; its work is given back
	poll(t, startTimeout, "the same HTTP/2 connection to serve again", func() (bool, string) {
		resp, body := h2Get(t, cc, s.url+"/metrics")
		return resp.StatusCode == http.StatusOK, resp.Status + " " + string(body)
	})
	if n := metric(t, s, `surge_front_rejected_total{reason="overloaded"}`); n < 3 {
		t.Fatalf(`surge_front_rejected_total{reason="overloaded"} = %v, want >= 3`, n)
	}
}

// holdEventStream opens the dashboard's event stream on a connection of
// its own and returns once its handler runs.
func holdEventStream(t *testing.T, s *server) *rawConn {
	t.Helper()
	rc := openRaw(t, s)
	rc.send("GET /ui/events HTTP/1.1\r\nHost: surge\r\n\r\n")
	if resp, err := http.ReadResponse(rc.r, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the event stream: %v %v", resp, err)
	}
	return rc
}

func wantOverloaded(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!bytes.Contains(body, []byte(`"overloaded"`)) {
		t.Fatalf("got %s (Retry-After %q) %s, want 503 overloaded with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
}

// h2cConn is one HTTP/2 connection (prior knowledge, no TLS) to s.
func h2cConn(t *testing.T, s *server) *http.ClientConn {
	t.Helper()
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	cc, err := tr.NewClientConn(context.Background(), "http", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func h2Get(t *testing.T, cc *http.ClientConn, u string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("HTTP/2 request on the same connection: %v", err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}
