package httpc

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestSplitTargets(t *testing.T) {
	got := SplitTargets(" http://a:1, ,http://b:2,")
	if len(got) != 2 || got[0] != "http://a:1" || got[1] != "http://b:2" {
		t.Errorf("SplitTargets = %q", got)
	}
}

// TestEndpointsSpreadOverTargets sends from six Endpoints of a client with
// two targets: each target gets three Endpoints' requests (and, over
// h2c, three of the six connections).
func TestEndpointsSpreadOverTargets(t *testing.T) {
	for _, kind := range []ClientKind{FastClient, StdClient, FastHTTPClient, H2CClient} {
		t.Run(string(kind), func(t *testing.T) {
			var hits [2]atomic.Int64
			var urls [2]string
			for i := range hits {
				h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits[i].Add(1) })
				if kind == H2CClient {
					_, urls[i] = startH2C(t, h)
					continue
				}
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				urls[i] = srv.URL
			}
			c, err := NewHTTPClient(HTTPOptions{Target: urls[0] + "," + urls[1], Client: kind, Conns: 6})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Target() != urls[0]+","+urls[1] || len(c.Split()) != 2 {
				t.Fatalf("targets %q, split into %d", c.Target(), len(c.Split()))
			}
			for range 6 {
				ep := c.Endpoint(t.Context(), http.MethodGet, "/")
				for range 5 {
					if status, _, err := ep.Send(nil); err != nil || status != 200 {
						t.Fatalf("send: %d %v", status, err)
					}
				}
				ep.Close()
			}
			if hits[0].Load() != 15 || hits[1].Load() != 15 {
				t.Errorf("targets got %d and %d requests, want 15 each", hits[0].Load(), hits[1].Load())
			}
			if e := c.H2Events(); (kind == H2CClient) != (e != nil) || (e != nil && e.Dials != 6) {
				t.Errorf("h2 events %+v", e)
			}
		})
	}
}
