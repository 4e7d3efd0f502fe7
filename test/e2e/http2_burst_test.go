package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHTTP2BurstPastMaxRequestsWaitsInClient: ticket-master's client
// shape, Go's HTTP/2 client with far more reservations in flight than the
// server takes at once (--max-inflight-requests 1, 5,000 POSTs). The
// client does not stop at a connection's stream limit, it dials another;
// the server reads a stream only when it has room for its request, so
// every reservation is served and none is refused 503 for a retry. The
// client dials at most 100 connections: left unbounded, Go's client dials
// one per request that finds every connection full, thousands from one
// address, and the server rightly refuses those past
// --max-conns-per-client, which is not what this test is about.
func TestHTTP2BurstPastMaxRequestsWaitsInClient(t *testing.T) {
	const requests = 5000
	s := start(t, t.TempDir(), "--max-inflight-requests", "1", "--max-streams", "100")
	var dials atomic.Int32
	tr := &http.Transport{Protocols: new(http.Protocols), MaxConnsPerHost: 100, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	status, body := postH2(c, s.url+"/v1/event", `{"eventName":"burst","artist":"a","areas":[{"areaId":"A","rowCount":40,"colCount":50}]}`)
	if status != http.StatusOK {
		t.Fatalf("creating the event: %d %s", status, body)
	}
	statuses := make(map[int]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			st, _ := postH2(c, s.url+"/v1/event/burst/reservation", `{"userId":"u","eventId":"burst","areaId":"A","numOfSeats":1,"type":"RANDOM"}`)
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusOK] != requests {
		t.Errorf("statuses %v (0: the request failed), want all %d 200", statuses, requests)
	}
	if n := metric(t, s, `surge_front_rejected_total{reason="max_requests"}`); n != 0 {
		t.Errorf("%v requests refused max_requests, want none", n)
	}
	if n := dials.Load(); n < 2 {
		t.Errorf("the client dialed %d connections for %d requests at 100 streams each: the burst never passed a connection's stream limit", n, requests)
	}
}

// postH2 posts body as JSON and returns the status (0 on an error) and
// the answer.
func postH2(c *http.Client, url, body string) (int, string) {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
