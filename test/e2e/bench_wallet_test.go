package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `surge bench wallet` against the real server, twice with one users
// cache: the first run sets the users up and caches them, the second
// reuses them (no registration, no setup) and measures the same calls;
// other settings make a run set its users up anew. Runs this short are
// flagged as too short to be stable.
func TestBenchWalletReusesItsUsers(t *testing.T) {
	srv := start(t, t.TempDir(), "--shards", "2", "--bcrypt-cost", "4")
	cache := filepath.Join(t.TempDir(), "users.json")
	run := func(users string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "wallet.json")
		cmd := exec.Command(binPath, "bench", "wallet", "--target", srv.url, "--call", "GetBalance", "-n", "200", "-c", "4",
			"--users", users, "--friends", "2", "--users-cache", cache, "--out", out)
		cmd.Env = childEnv()
		text, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bench wallet: %v\n%s", err, text)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Totals struct {
				Requests int64 `json:"requests"`
				Failed   int64 `json:"failed"`
			} `json:"totals"`
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Totals.Requests != 200 || res.Totals.Failed != 0 || len(res.Warnings) != 1 {
			t.Fatalf("result %+v: want 200 calls, none failed, and the short run flagged\n%s", res, text)
		}
		if !strings.Contains(string(text), "warning: the measured run lasted") {
			t.Errorf("summary does not warn of the short run:\n%s", text)
		}
		return string(text)
	}
	const fromCache = "from an earlier run"
	if text := run("20"); strings.Contains(text, fromCache) || !strings.Contains(text, "users signed in") {
		t.Fatalf("first run did not set its users up:\n%s", text)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no users cache after the first run: %v", err)
	}
	if text := run("20"); !strings.Contains(text, fromCache) || strings.Contains(text, "users signed in") {
		t.Fatalf("second run did not reuse the cached users:\n%s", text)
	}
	if text := run("24"); strings.Contains(text, fromCache) {
		t.Fatalf("a run with other settings used the cache:\n%s", text)
	}
}
