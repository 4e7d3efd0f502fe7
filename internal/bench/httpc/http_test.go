package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStatusKeyAndDetail(t *testing.T) {
	p := []byte(`{"type":"https://surge.dev/problems/insufficient_funds","title":"Insufficient funds",` +
		`"status":422,"code" : "insufficient_funds","detail":"account \"a\" has 10"}`)
	if got := StatusKey(422, p); got != "422 insufficient_funds" {
		t.Errorf("StatusKey = %q", got)
	}
	if got := ProblemDetail(p); got != `account "a" has 10` {
		t.Errorf("ProblemDetail = %q", got)
	}
	if got := StatusKey(502, []byte("<html>bad gateway</html>")); got != "502" {
		t.Errorf("StatusKey without a problem = %q", got)
	}
	// A "code" inside a string value is escaped, so it is not a key.
	if got := StatusKey(400, []byte(`{"detail":"say \"code\":\"x\""}`)); got != "400" {
		t.Errorf("StatusKey matched inside a string: %q", got)
	}
}

func TestErrorKey(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := http.Get(url)
	if got := ErrorKey(err); got != "error connection_refused" {
		t.Errorf("ErrorKey(%v) = %q", err, got)
	}
	if got := ErrorKey(fmt.Errorf("read: %w", io.ErrUnexpectedEOF)); got != "error eof" {
		t.Errorf("ErrorKey(unexpected EOF) = %q", got)
	}
	if got := ErrorKey(context.DeadlineExceeded); got != "error timeout" {
		t.Errorf("ErrorKey(deadline) = %q", got)
	}
	if got := ErrorKey(errors.New("strange")); got != "error other" {
		t.Errorf("ErrorKey(strange) = %q", got)
	}
}

// TestEndpointReusesBodyOnlyAfterSuccess checks the rule that keeps the
// net/http client's body buffers safe: reused after a 2xx on a kept-alive
// connection, never after an error reply, when the transport may still
// hold it. (The fast client always reuses it: see TestFastReusesBuffers.)
func TestEndpointReusesBodyOnlyAfterSuccess(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b)) // one client, one request at a time
		if strings.HasPrefix(string(b), "fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "echo %s", b)
	}))
	defer srv.Close()
	c, err := NewHTTPClient(HTTPOptions{Target: srv.URL, Conns: 1, Client: StdClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := c.Endpoint(context.Background(), http.MethodPost, "/x")

	send := func(s string) (first *byte) {
		b := append(ep.Body(), s...)
		status, reply, err := ep.Send(b)
		if err != nil || string(reply) != "echo "+s {
			t.Fatalf("send %q: status %d reply %q err %v", s, status, reply, err)
		}
		return &b[0]
	}
	a := send("first body")
	if b := send("second"); b != a {
		t.Error("buffer not reused after a 200")
	}
	c3 := send("fail please")
	if d := send("fourth"); d == c3 {
		t.Error("buffer reused after a 503")
	}
	if fmt.Sprint(bodies) != "[first body second fail please fourth]" {
		t.Errorf("server got %q", bodies)
	}
	if c.BytesSent() <= int64(len("first bodysecondfail pleasefourth")) || c.BytesReceived() <= 0 {
		t.Errorf("wire counts sent %d received %d", c.BytesSent(), c.BytesReceived())
	}
}
