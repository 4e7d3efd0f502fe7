package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientFrom is an HTTP client whose connections come from local address
// ip (any of 127.0.0.0/8 is this host's loopback), each request on a
// connection of its own.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		DisableKeepAlives: true,
	}}
}

func getFrom(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAbuseOneClientCannotTakeEveryConnection: one address opening as
// many idle connections as --max-conns allows gets its quarter of them
// (--max-conns-per-client's default); a client from another address is
// still served.
func TestAbuseOneClientCannotTakeEveryConnection(t *testing.T) {
	const limit = 40
	s := start(t, t.TempDir(), "--max-conns", strconv.Itoa(limit))
	s.c.hc.CloseIdleConnections()
	for range limit {
		_ = openRaw(t, s) // idle: sends nothing
	}
	other := clientFrom("127.0.0.2")
	// Wait until the server has taken every connection in: held, or
	// refused for their client; or it refuses every new one.
	poll(t, startTimeout, "the idle connections to be taken in", func() (bool, string) {
		status, page := getFrom(t, other, s.url+"/metrics")
		if status != http.StatusOK {
			return status == http.StatusServiceUnavailable, page
		}
		open := sample(t, []byte(page), "surge_front_connections")
		refused := max(sample(t, []byte(page), `surge_front_rejected_total{reason="client_conns"}`), 0)
		return open+refused >= limit+1, strings.TrimSpace(page[:min(len(page), 200)])
	})
	if status, body := getFrom(t, clientFrom("127.0.0.3"), s.url+"/healthz"); status != http.StatusOK {
		t.Fatalf("another client while one address holds %d idle connections: %d %s", limit, status, body)
	}
	_, page := getFrom(t, other, s.url+"/metrics")
	if n := sample(t, []byte(page), `surge_front_limit{limit="max_conns_per_client"}`); n != limit/4 {
		t.Fatalf(`surge_front_limit{limit="max_conns_per_client"} = %v, want %d`, n, limit/4)
	}
}

// TestAbuseOneClientCannotTakeAllWork: a client holding its share of
// --max-inflight (--max-inflight-per-client: one unit of four, here a
// reply its reader takes nothing of) is refused more (503 overloaded), while other clients, and a
// client a trusted proxy names in X-Forwarded-For, are served.
func TestAbuseOneClientCannotTakeAllWork(t *testing.T) {
	s := start(t, t.TempDir(), "--max-inflight", "4", "--max-inflight-per-client", "1", "--trusted-proxies", "127.0.0.4")
	stallResponses(t, s, 1)
	if status, body := getFrom(t, clientFrom("127.0.0.1"), s.url+"/metrics"); status != http.StatusServiceUnavailable ||
		!strings.Contains(body, "this client") {
		t.Fatalf("the same client past its share: %d %s, want 503", status, body)
	}
	if status, body := getFrom(t, clientFrom("127.0.0.2"), s.url+"/metrics"); status != http.StatusOK {
		t.Fatalf("another client: %d %s", status, body)
	}
	// Through a trusted proxy, the client is the one X-Forwarded-For names.
	proxy := clientFrom("127.0.0.4")
	for _, tc := range []struct {
		forwarded string
		want      int
	}{{"127.0.0.1", http.StatusServiceUnavailable}, {"127.0.0.1, 10.0.0.9", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
		req.Header.Set("X-Forwarded-For", tc.forwarded)
		resp, err := proxy.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("through the proxy for %s: %s, want %d", tc.forwarded, resp.Status, tc.want)
		}
	}
	_, page := getFrom(t, clientFrom("127.0.0.2"), s.url+"/metrics")
	if n := sample(t, []byte(page), `surge_front_rejected_total{reason="client_overloaded"}`); n != 2 {
		t.Fatalf(`surge_front_rejected_total{reason="client_overloaded"} = %v, want 2`, n)
	}
}
