package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlippedWALByteRefusesToStart writes acknowledged transfers and
// key-value entries, kills the server with SIGKILL, flips one byte in the
// middle of each store's newest WAL and restarts: the server must refuse
// to start, naming the file and offset, rather than start without the
// acknowledged writes after the damage; --accept-wal-loss must start it.
func TestFlippedWALByteRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir)
	mustCreateAccount(t, srv.c, NewAccount{ID: "alice", Currency: "USD"})
	for i := range 50 {
		if _, r, err := srv.c.Transfer(TransferReq{ID: fmt.Sprintf("t%d", i), From: "@world", To: "alice", Amount: 1}); err != nil || r.Status/100 != 2 {
			t.Fatalf("transfer %d: %v %v", i, r, err)
		}
		if r, err := srv.c.kvPut(fmt.Sprintf("k%d", i), []byte("v")); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("PUT %d: %v %v", i, r, err)
		}
	}
	srv.kill()
	ledgerWAL := flipInNewestWAL(t, dir)
	flipInNewestWAL(t, filepath.Join(dir, "kv"))

	refused := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, nil)
	refused.wait()
	out := refused.out.String()
	if refused.err == nil || !strings.Contains(out, ledgerWAL) || !strings.Contains(out, "damaged at offset") {
		t.Fatalf("a server over a damaged WAL must refuse to start naming it (%s); exit %v, output:\n%s", ledgerWAL, refused.err, out)
	}
	accepted := start(t, dir, "--accept-wal-loss")
	a, r, err := accepted.c.Account("alice")
	if err != nil || r.Status != http.StatusOK || a.Balance >= 50 {
		t.Fatalf("after accepting the loss: %+v %v %v", a, r, err)
	}
	if !strings.Contains(accepted.out.String(), "accepting the loss of WAL "+ledgerWAL) {
		t.Errorf("accepting the loss must be logged, naming the WAL")
	}
}

// flipInNewestWAL flips a byte a third of the way into the newest WAL of
// the store in dir and returns the WAL's path.
func flipInNewestWAL(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL in %s: %v", dir, err)
	}
	slices.Sort(logs) // fixed-width numbers: the newest sorts last
	wal := logs[len(logs)-1]
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x40
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d of %s (%d bytes)", len(b)/3, wal, len(b))
	return wal
}
