package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `surge bench spike` against the real server: it sells every seat, finds
// no double booking in the replies or the seat maps, and exits 0; also
// with its VUs pipelining requests on shared connections, which the
// server must answer in order.
func TestBenchSpikeAgainstServer(t *testing.T) {
	for _, pipeline := range []string{"1", "8"} {
		t.Run("pipeline="+pipeline, func(t *testing.T) {
			srv := start(t, t.TempDir(), "--shards", "2")
			out := filepath.Join(t.TempDir(), "spike.json")
			cmd := exec.Command(binPath, "bench", "spike", "--target", srv.url, "-n", "3000", "-c", "32",
				"--pipeline", pipeline, "--events", "2", "--areas", "5", "--rows", "3", "--cols", "4", "--out", out)
			cmd.Env = childEnv()
			text, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bench spike: %v\n%s", err, text)
			}
			if !strings.Contains(string(text), "120 of 120") {
				t.Fatalf("summary does not report 120 of 120 seats sold:\n%s", text)
			}
			checkSpikeResult(t, out)
		})
	}
}

func checkSpikeResult(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Totals struct {
			Requests int64 `json:"requests"`
			Failed   int64 `json:"failed"`
		} `json:"totals"`
		Spike *struct {
			Capacity        int64 `json:"capacity"`
			SeatsSold       int64 `json:"seats_sold"`
			ServerSeatsSold int64 `json:"server_seats_sold"`
			DoubleBookings  int64 `json:"double_bookings"`
		} `json:"spike"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Spike == nil {
		t.Fatalf("result file %s: %v %.300s", out, err, b)
	}
	if s := res.Spike; s.Capacity != 120 || s.SeatsSold != 120 || s.ServerSeatsSold != 120 || s.DoubleBookings != 0 {
		t.Fatalf("result: %+v", *s)
	}
	if res.Totals.Requests != 3000 || res.Totals.Failed != 0 {
		t.Fatalf("totals: %+v, want 3000 requests, none failed", res.Totals)
	}
}

// `surge bench spike --http2` against the real server: the workers'
// requests share two h2c connections as streams, every seat is sold once,
// the result says how many connections were dialled and what the server
// did to them, and --ceiling adds the same client's run against an empty
// handler in a process of its own, with that process's CPU time.
func TestBenchSpikeOverHTTP2(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "2")
	out := filepath.Join(t.TempDir(), "spike.json")
	cmd := exec.Command(binPath, "bench", "spike", "--target", srv.url, "-n", "3000", "-c", "64", "--http2", "--conns", "2",
		"--ceiling", "--events", "2", "--areas", "5", "--rows", "3", "--cols", "4", "--out", out)
	cmd.Env = childEnv()
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench spike --http2: %v\n%s", err, text)
	}
	for _, want := range []string{"http2_connections..............: 2, 2 dials", "http2_goaways..................: none", "h2c_ceiling"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	checkSpikeResult(t, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Spike struct {
			HTTP2 *struct {
				Conns   int   `json:"conns"`
				Dials   int64 `json:"dials"`
				Ceiling *struct {
					Iterations int64   `json:"iterations"`
					Failed     int64   `json:"failed"`
					CPU        float64 `json:"cpu_s"`
				} `json:"ceiling"`
			} `json:"http2"`
		} `json:"spike"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	h := res.Spike.HTTP2
	if h == nil || h.Conns != 2 || h.Dials != 2 || h.Ceiling == nil || h.Ceiling.Iterations != 3000 || h.Ceiling.Failed != 0 {
		t.Errorf("http2 report %+v; want 2 connections dialled once each and a ceiling of 3,000 clean iterations", h)
	}
	if h != nil && h.Ceiling != nil && h.Ceiling.CPU <= 0 {
		t.Errorf("ceiling's CPU %v s; want the empty handler's process's own, above 0", h.Ceiling.CPU)
	}
}

// TestBenchSpikeH2MoreWorkersThanStreams runs the lab's HTTP/2 shape with
// more workers per connection than the server lets streams in (32 on
// each of 2 connections, --max-streams 8): every request completes, the
// server resets no stream and closes no connection, and the result has the
// server's CPU time. The lab's client once wedged on this shape with no
// request done, and the server refused the streams a client opened
// before its stream limit reached it.
func TestBenchSpikeH2MoreWorkersThanStreams(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "2", "--max-streams", "8")
	out := filepath.Join(t.TempDir(), "spike.json")
	// A wedged run is killed at the deadline and fails; no speed check.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "bench", "spike", "--target", srv.url, "-n", "3000", "-c", "64", "--http2", "--conns", "2",
		"--events", "2", "--areas", "5", "--rows", "3", "--cols", "4", "--no-stall-meter", "--out", out)
	cmd.Env = childEnv()
	if text, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench spike --http2: %v\n%s", err, text)
	}
	checkSpikeResult(t, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Totals struct {
			Iterations int64 `json:"iterations"`
			Failed     int64 `json:"failed"`
		} `json:"totals"`
		Spike struct {
			ServerCPU float64 `json:"server_cpu_s"`
			HTTP2     struct {
				Dials      int64            `json:"dials"`
				GoAways    map[string]int64 `json:"goaways"`
				Resets     map[string]int64 `json:"resets"`
				ConnErrors map[string]int64 `json:"conn_errors"`
			} `json:"http2"`
		} `json:"spike"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	h := res.Spike.HTTP2
	if res.Totals.Iterations != 3000 || res.Totals.Failed != 0 {
		t.Errorf("totals %+v, want 3,000 reservations, none failed", res.Totals)
	}
	if h.Dials != 2 || len(h.GoAways)+len(h.Resets)+len(h.ConnErrors) != 0 {
		t.Errorf("connections %+v, want 2 dials and nothing done to them", h)
	}
	if res.Spike.ServerCPU <= 0 {
		t.Errorf("server CPU %g s, want the run's", res.Spike.ServerCPU)
	}
}
