package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
