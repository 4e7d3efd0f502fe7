package bench

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	terms, err := ParseSLO("p99=1ms, p99.9=5ms")
	if err != nil || len(terms) != 2 || terms[0].Quantile != 0.99 || terms[1].Max != 5*time.Millisecond || terms[1].Name != "p99.9" {
		t.Fatalf("ParseSLO = %+v, %v", terms, err)
	}
	for _, bad := range []string{"", "p99", "99=1ms", "p0=1ms", "p101=1ms", "p99=fast", "p99=-1ms", "p99=1ms,"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q) accepted", bad)
		}
	}
}

// TestSearchStep walks the search against a server whose capacity is
// known: every rate up to it passes.
func TestSearchStep(t *testing.T) {
	for _, c := range []struct{ start, capacity float64 }{{1000, 13000}, {1000, 1000}, {50000, 12345}, {1000, 0.5}} {
		next := searchStep(c.start)
		pass, fail := 0.0, math.Inf(1)
		probes := 0
		for rate, ok := c.start, true; ok; rate, ok = next(pass, fail) {
			if probes++; probes > 40 {
				t.Fatalf("start %v capacity %v: no end after 40 probes", c.start, c.capacity)
			}
			if rate <= c.capacity {
				pass = max(pass, rate)
			} else {
				fail = min(fail, rate)
			}
		}
		if c.capacity < 1 {
			if pass != 0 {
				t.Errorf("capacity %v: found %v", c.capacity, pass)
			}
			continue
		}
		if pass > c.capacity || pass < c.capacity/(1+searchPrecision)-1 {
			t.Errorf("start %v capacity %v: found %v", c.start, c.capacity, pass)
		}
	}
}

func TestAppendKVKey(t *testing.T) {
	for i, want := range map[int]string{0: "k0000000000", 42: "k0000000042", 1299999: "k0001299999", 9999999999: "k9999999999"} {
		if got := string(appendKVKey([]byte("x"), i)); got != "x"+want {
			t.Errorf("appendKVKey(%d) = %q, want x%s", i, got, want)
		}
	}
}

func TestWrkFormats(t *testing.T) {
	cases := map[string]string{
		wrkTime(0.649): "649.00us", wrkTime(0.94): "0.94ms", wrkTime(13.22): "13.22ms", wrkTime(1490): "1.49s",
		wrkCount(11830): "11.83k", wrkCount(695.74): "695.74", wrkBytes(43.13 * 1024 * 1024): "43.13MB",
		wrkDuration(60): "1.00m", wrkDuration(3): "3.00s",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

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
	for _, kind := range []ClientKind{FastClient, StdClient} {
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

// TestOpenRateAndCorrection runs the open model against a server that
// answers at once except for one long stall, and checks the two things
// the model exists for: the number of requests follows the rate, not the
// server, and the requests the stall delayed are charged for it.
func TestOpenRateAndCorrection(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("n") == "10" {
			<-release // the 11th request stalls until the test lets it go
		}
	}))
	defer srv.Close()
	c, err := NewHTTPClient(HTTPOptions{Target: srv.URL, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const rate, dur = 200, time.Second
	o := Open{Senders: 1, Rate: rate, Duration: dur, Seed: 1}
	run, err := o.Run(context.Background(), func(ctx context.Context, vu *VU) (Request, error) {
		ep := c.Endpoint(ctx, http.MethodGet, "/")
		return func(ctx context.Context, vu *VU) Outcome {
			if vu.N == 10 {
				// Stall for a fifth of the run: 40 requests fall due meanwhile.
				time.AfterFunc(dur/5, func() { once.Do(func() { close(release) }) })
			}
			uri := []byte("/?n=" + itoa(vu.N))
			if _, _, err := ep.SendURI(http.MethodGet, uri, nil); err != nil {
				return Outcome{Failure: ErrorKey(err)}
			}
			return Outcome{}
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Stats.Requests() + run.Unsent; got != rate*int64(dur/time.Second) {
		t.Errorf("%d requests sent and %d unsent, want %d due", run.Stats.Requests(), run.Unsent, rate)
	}
	// Each of the ~40 requests due during the stall waited for it: the
	// slowest waited about the stall, and about 20% of all waited longer
	// than a tenth of it. A closed loop would report one slow request.
	if slow := run.Stats.Quantile(0.85); slow < dur/50 {
		t.Errorf("p85 latency %v: the requests delayed by the stall were not charged for it", slow)
	}
	if run.Stats.Max() < dur/5 {
		t.Errorf("max latency %v, want at least the stall of %v", run.Stats.Max(), dur/5)
	}
}

func TestProbeLineShowsSteal(t *testing.T) {
	p := KVProbe{Rate: 1000, Achieved: 1000, P50Ms: 0.2, P99Ms: 38.5, P999Ms: 50, MaxMs: 57, Why: "p99 38.5ms > 1ms",
		MachineCPU: &MachineCPU{Steal: 0.21}}
	want := "rate 1,000/s → 1,000/s, p50 200µs, p99 38.5ms, p99.9 50ms, max 57ms, 0 failed, 0 unsent, steal 21%: FAIL (p99 38.5ms > 1ms)"
	if got := p.String(); got != want {
		t.Errorf("probe line\n got %q\nwant %q", got, want)
	}
	p.MachineCPU = nil
	if got := p.String(); strings.Contains(got, "steal") {
		t.Errorf("probe line without a machine reading mentions steal: %q", got)
	}
}
