package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

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
