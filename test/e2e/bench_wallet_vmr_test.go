package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBenchWalletVMR: `surge bench wallet --api vmr` drives VMR's five
// calls on the same users as surge's own face, and every call succeeds,
// errors in VMR's reply fields included (a Transfer under 1,000 or without
// the password would count as failed).
func TestBenchWalletVMR(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	for _, call := range []string{"Transfer", "GetBalance", "GetHistory", "GetFriendList", "GetChatFriendList"} {
		cmd := exec.Command(binPath, "bench", "wallet", "--api", "vmr", "--target", srv.url, "--call", call,
			"-n", "60", "-c", "4", "--users", "6", "--friends", "2")
		cmd.Env = childEnv()
		text, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bench wallet --api vmr --call %s: %v\n%s", call, err, text)
		}
		out := string(text)
		if !strings.Contains(out, "[OK]   60 responses") {
			t.Errorf("--call %s: want 60 OK calls in ghz's shape:\n%s", call, out)
		}
	}
	cmd := exec.Command(binPath, "bench", "wallet", "--api", "vmr", "--target", srv.url, "--call", "GetMessages", "-n", "1")
	cmd.Env = childEnv()
	if text, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(text), "has no GetMessages") {
		t.Errorf("GetMessages over --api vmr: %v\n%s", err, text)
	}
}
