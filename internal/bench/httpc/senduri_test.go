package httpc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestSendURI sends requests with several methods and request-URIs on one
// Endpoint, with both clients, and checks what the server received.
func TestSendURI(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		mu.Unlock()
		_, _ = io.WriteString(w, r.Method)
	}))
	defer srv.Close()
	for _, kind := range []ClientKind{FastClient, StdClient, FastHTTPClient} {
		seen = nil
		c, err := NewHTTPClient(HTTPOptions{Target: srv.URL, Client: kind, Conns: 1})
		if err != nil {
			t.Fatal(err)
		}
		ep := c.Endpoint(context.Background(), http.MethodGet, "/v0/entity")
		for _, req := range [][3]string{{"PUT", "/v0/entity?id=k1", "v"}, {"GET", "/v0/entities?start=a&end=b", ""}, {"DELETE", "/v0/entity?id=k%20", ""}} {
			var body []byte
			if req[2] != "" {
				body = []byte(req[2])
			}
			status, reply, err := ep.SendURI(req[0], []byte(req[1]), body)
			if err != nil || status != 200 || string(reply) != req[0] {
				t.Errorf("%s: %s %s: %d %q %v", kind, req[0], req[1], status, reply, err)
			}
		}
		if _, _, err := ep.Send(nil); err != nil {
			t.Errorf("%s: Send after SendURI: %v", kind, err)
		}
		ep.Close()
		c.Close()
		want := "PUT /v0/entity?id=k1 v|GET /v0/entities?start=a&end=b |DELETE /v0/entity?id=k%20 |GET /v0/entity "
		if got := strings.Join(seen, "|"); got != want {
			t.Errorf("%s: server saw %q, want %q", kind, got, want)
		}
	}
}
