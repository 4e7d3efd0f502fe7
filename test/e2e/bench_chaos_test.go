package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBenchChaos runs a short `surge bench chaos` with the real binary:
// three kill -9s under mixed load, a byte flipped in the stopped ledger's
// WAL after each and then one in a table file, and an audit after each
// restart. It must find nothing lost and no anomaly, every flipped WAL
// byte refused at start and every flipped table byte reported.
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
	// A flip in a table the kill left obsolete is not counted: the start
	// deletes it.
	tables := regexp.MustCompile(`flipped table bytes: (\d+), reported naming the file: (\d+)`).FindStringSubmatch(string(out))
	if tables == nil || tables[1] != tables[2] {
		t.Errorf("bench chaos flipped no table byte, or some went unreported: %q", tables)
	}
}

// TestBenchChaosFill runs a short `surge bench chaos --fill-mib`: the data
// on a tmpfs the bench mounts, filled once in each of two cycles under
// mixed load, then freed, then the kill -9 and the audit. surge must
// refuse writes and say so, resume by itself, and lose nothing
// acknowledged. It needs root to mount the tmpfs (CI runs as root).
func TestBenchChaosFill(t *testing.T) {
	skipIfShort(t)
	if os.Geteuid() != 0 {
		t.Skip("filling a real disk needs root to mount a tmpfs")
	}
	seed := newRand(t).Uint64()
	cmd := exec.Command(binPath, "bench", "chaos", "--binary", binPath, "--fill-mib", "128",
		"--kills", "2", "--min-ops", "100", "--max-ops", "400", "--seed", strconv.FormatUint(seed, 10))
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("bench chaos:\n%s", out)
	if err != nil {
		t.Fatalf("bench chaos failed: %v", err)
	}
	for _, want := range []string{"kill -9: 2, audits: 2", "disk filled: 2, writes refused and then resumed once freed: 2"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bench chaos output lacks %q", want)
		}
	}
}
