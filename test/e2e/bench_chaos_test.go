package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestBenchChaos runs a short `surge bench chaos` with the real binary:
// three kill -9s under mixed load, a byte flipped in the stopped ledger's
// WAL after each, and an audit after each restart. It must find nothing
// lost and no anomaly, and every flipped byte refused at start.
func TestBenchChaos(t *testing.T) {
	skipIfShort(t)
	seed := newRand(t).Uint64()
	cmd := exec.Command(binPath, "bench", "chaos", "--binary", binPath, "--data", t.TempDir(),
		"--kills", "3", "--min-ops", "100", "--max-ops", "600", "--flip", "--seed", strconv.FormatUint(seed, 10))
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("bench chaos:\n%s", out)
	if err != nil {
		t.Fatalf("bench chaos failed: %v", err)
	}
	for _, want := range []string{"kill -9: 3, audits: 3", "refused to start naming the damage: 3"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bench chaos output lacks %q", want)
		}
	}
}
