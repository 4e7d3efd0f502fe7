package e2e

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAbuseHTTP1OverloadShed: HTTP/1.1 clients, one request per
// connection, reach the bound on requests in progress
// (--max-inflight-requests 128), far below --max-conns. Past it every further request is answered at once with 503
// overloaded and Retry-After, over HTTP/1.1 and HTTP/2 alike, while
// /healthz, asked on connections of its own at the same time, is never
// refused; once the requests end, the server serves again.
func TestAbuseHTTP1OverloadShed(t *testing.T) {
	const bound, excess = 128, 64
	s, holders := serverAtBound(t, bound)

	oneShot := clientFrom("127.0.0.1") // a connection per request
	type answer struct {
		path, status, retryAfter, body string
	}
	answers := make(chan answer, 2*excess)
	var wg sync.WaitGroup
	for range excess {
		for _, path := range []string{"/v1/accounts/shed-1", "/healthz"} {
			wg.Go(func() {
				resp, err := oneShot.Get(s.url + path)
				if err != nil {
					answers <- answer{path: path, status: err.Error()}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				answers <- answer{path, strconv.Itoa(resp.StatusCode), resp.Header.Get("Retry-After"), string(b)}
			})
		}
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		switch {
		case a.path == "/healthz" && a.status != "200":
			t.Errorf("/healthz past the bound: %s %s", a.status, a.body)
		case a.path != "/healthz" && (a.status != "503" || a.retryAfter != "1" || !strings.Contains(a.body, `"overloaded"`)):
			t.Errorf("%s past the bound: %s (Retry-After %q) %s, want 503 overloaded with Retry-After: 1", a.path, a.status, a.retryAfter, a.body)
		}
	}
	resp, body := h2Get(t, h2cConn(t, s), s.url+"/v1/accounts/shed-1")
	wantOverloaded(t, resp, body)

	polledRefused := releaseAndAwaitServing(t, s, oneShot, holders)
	if n, want := metric(t, s, `surge_front_rejected_total{reason="max_requests"}`), excess+1+polledRefused; n != float64(want) {
		t.Errorf(`surge_front_rejected_total{reason="max_requests"} = %v, want %d`, n, want)
	}
	if n := metric(t, s, `surge_front_limit{limit="max_requests"}`); n != bound {
		t.Errorf(`surge_front_limit{limit="max_requests"} = %v, want %d`, n, bound)
	}
}

// TestAbuseOverloadRetryAfterSpread: clients refused together are not all
// told to come back in the same second. With --max-inflight-requests 4,
// no second is named for more than 4 returns of the refusals of any one
// second, so that 64 refusals made within a second (two of the server's)
// name at least 8 different delays; every refusal is counted.
func TestAbuseOverloadRetryAfterSpread(t *testing.T) {
	const bound, refused = 4, 64
	s, holders := serverAtBound(t, bound)

	oneShot := clientFrom("127.0.0.1")
	retryAfter := make(chan int, refused)
	var wg sync.WaitGroup
	begun := time.Now()
	for range refused {
		wg.Go(func() {
			status, after, body := getRetryAfter(t, oneShot, s.url+"/v1/accounts/spread-1")
			if status != http.StatusServiceUnavailable || after < 1 || after > 30 {
				t.Errorf("past the bound: %d (Retry-After %d) %s, want 503 with Retry-After 1 to 30", status, after, body)
			}
			retryAfter <- after
		})
	}
	wg.Wait()
	// The refusals fell in at most this many of the server's seconds,
	// whose boundaries are not the test's: a span under a second may
	// straddle one.
	seconds := int(time.Since(begun)/time.Second) + 2
	close(retryAfter)
	named := map[int]int{}
	for a := range retryAfter {
		named[a]++
	}
	for a, n := range named {
		if n > bound*seconds {
			t.Errorf("Retry-After %d named %d times by refusals within %d s, want at most %d a second: %v", a, n, seconds, bound, named)
		}
	}
	polledRefused := releaseAndAwaitServing(t, s, oneShot, holders)
	if n, want := metric(t, s, `surge_front_rejected_total{reason="max_requests"}`), refused+polledRefused; n != float64(want) {
		t.Errorf(`surge_front_rejected_total{reason="max_requests"} = %v, want %d`, n, want)
	}
}

// getRetryAfter GETs url with c and returns the status, the Retry-After
// in seconds (0: none) and the body.
func getRetryAfter(t *testing.T, c *http.Client, url string) (int, int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, after, string(b)
}

// serverAtBound starts a server with --max-inflight-requests bound and
// fills the bound: each stalled reply is a request in its handler for as
// long as its reader, on the connections returned, takes nothing.
func serverAtBound(t *testing.T, bound int) (*server, []net.Conn) {
	t.Helper()
	s := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--max-inflight-requests", strconv.Itoa(bound)}, nil)
	s.awaitReady("")
	s.c.hc.CloseIdleConnections()
	return s, stallResponses(t, s, bound)
}

// releaseAndAwaitServing closes the holders' connections and polls s with
// c until it serves again, returning how many polls were refused. The
// holders' requests end as the server sees their connections close:
// until then a poll may itself be refused, and counted.
func releaseAndAwaitServing(t *testing.T, s *server, c *http.Client, holders []net.Conn) int {
	t.Helper()
	for _, h := range holders {
		_ = h.Close()
	}
	refused := 0
	poll(t, startTimeout, "the server to serve again once the requests end", func() (bool, string) {
		status, page := getFrom(t, c, s.url+"/metrics")
		if status == http.StatusServiceUnavailable {
			refused++
		}
		return status == http.StatusOK, page[:min(len(page), 200)]
	})
	return refused
}
