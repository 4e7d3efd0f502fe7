package httpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
)

// TestH2FastFlowControl sends and receives bodies larger than every
// window either side starts with: both sides' WINDOW_UPDATEs must flow
// for the exchange to finish, and the bytes must arrive whole and in
// order.
func TestH2FastFlowControl(t *testing.T) {
	const size = 9 << 20 // over the client's stream window twice, the server's many times
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Retry-After", "7")
		_, _ = w.Write(bytes.Repeat(body, 2))
	}))
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: H2FastClient, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := c.Endpoint(t.Context(), http.MethodPost, "/echo")
	defer ep.Close()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 7)
	}
	for range 2 { // the second exchange starts on windows the first used up
		status, reply, err := ep.Send(body)
		if err != nil || status != http.StatusOK {
			t.Fatalf("send: %d %v", status, err)
		}
		if !bytes.Equal(reply, bytes.Repeat(body, 2)) {
			t.Fatalf("reply of %d bytes is not the body twice (%d bytes)", len(reply), 2*len(body))
		}
		if ep.RetryAfter() != 7*time.Second {
			t.Errorf("Retry-After %s, want 7s", ep.RetryAfter())
		}
	}
}

// TestH2FastTimesOutAndGoesOn: a stream with no reply times out as a
// timeout, its stream reset; the connection carries the next request.
func TestH2FastTimesOutAndGoesOn(t *testing.T) {
	url := startHangingH2C(t)
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: H2FastClient, Conns: 1, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := c.Endpoint(t.Context(), http.MethodGet, "/hang")
	defer ep.Close()
	if _, _, err := ep.Send(nil); ErrorKey(err) != "error timeout" {
		t.Fatalf("a request with no reply: %v (%s), want a timeout", err, ErrorKey(err))
	}
	status, reply, err := ep.SendURI(http.MethodGet, []byte("/ok"), nil)
	if err != nil || status != 200 || string(reply) != "ok" {
		t.Fatalf("the next request: %d %q %v", status, reply, err)
	}
	if e := c.H2Events(); e.Dials != 1 {
		t.Errorf("events %+v, want the one connection kept", e)
	}
}

// TestH2FastGivesUpWithTheContext: a request in flight ends with its
// Endpoint's context, as cancelled, long before its timeout.
func TestH2FastGivesUpWithTheContext(t *testing.T) {
	started := make(chan struct{})
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	c, _ := rawH2Client(t, url, time.Hour)
	sendCancelled(t, c, started)
}

// startHangingH2C starts an h2c server that answers "ok" at once, except
// at /hang: no answer until the stream is reset or the test ends.
func startHangingH2C(t *testing.T) string {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done(): // the client's RST_STREAM
			}
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	return url
}

// sendCancelled sends a request of c whose context is cancelled once
// started is closed: it must end as cancelled.
func sendCancelled(t *testing.T, c *HTTPClient, started <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ep := c.Endpoint(ctx, http.MethodGet, "/")
	defer ep.Close()
	go func() {
		<-started
		cancel()
	}()
	if _, _, err := ep.Send(nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's cancellation", err)
	}
}

// TestH2FastRepliesGoToTheirStreams has many Endpoints on one connection,
// each checking that its reply is its own.
func TestH2FastRepliesGoToTheirStreams(t *testing.T) {
	_, url := startH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	c, err := NewHTTPClient(HTTPOptions{Target: url, Client: H2FastClient, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error)
	const workers = 50
	for w := range workers {
		ep := c.Endpoint(t.Context(), http.MethodGet, "/")
		go func() {
			defer ep.Close()
			for i := range 40 {
				uri := "/w" + strconv.Itoa(w) + "/" + strconv.Itoa(i)
				status, reply, err := ep.SendURI(http.MethodGet, []byte(uri), nil)
				if err != nil || status != 200 || string(reply) != uri {
					done <- errors.New("reply " + strconv.Itoa(status) + " " + string(reply) + " to " + uri)
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestH2FastHeaderBlock decodes a request's header block with x/net's
// HPACK decoder, including an integer past its prefix (a value of more
// than 126 bytes) and the table size update that opens it.
func TestH2FastHeaderBlock(t *testing.T) {
	long := strings.Repeat("p", 300)
	b := append([]byte{hpackTableSizeZero}, appendField(nil, hpackMethod, "POST")...)
	b = appendField(b, hpackPath, []byte("/"+long))
	b = appendField(b, hpackContentLength, "17")
	fields, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []hpack.HeaderField{
		{Name: ":method", Value: "POST", Sensitive: true},
		{Name: ":path", Value: "/" + long, Sensitive: true},
		{Name: "content-length", Value: "17", Sensitive: true},
	}
	if !slices.Equal(fields, want) {
		t.Errorf("decoded %v, want %v", fields, want)
	}
}
