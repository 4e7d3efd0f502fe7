package e2e

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests fill a real disk: a tmpfs the test mounts, so they need
// root (CI runs as root). Elsewhere they skip, and the store's own tests
// cover the same faults through Pebble's error-injecting file system
// (internal/store/fault_test.go).

// fullDiskMiB is the size of the tmpfs; small, so that filling it is quick.
const fullDiskMiB = 48

// mountTmpfs mounts a tmpfs of sizeMiB under a temporary directory and
// returns it; it is unmounted when the test ends.
func mountTmpfs(t *testing.T, sizeMiB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("filling a real disk needs root to mount a tmpfs; internal/store's fault tests use Pebble's errorfs instead")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s); internal/store's fault tests use Pebble's errorfs instead", err, out)
	}
	t.Logf("real disk: a %d MiB tmpfs at %s", sizeMiB, dir)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system has no space left,
// and returns a function that removes it.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", dir, err)
				}
				break
			}
		}
	}
	t.Logf("disk filled (%s)", p)
	return func() {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		t.Logf("disk freed")
	}
}

// awaitListening waits for the server's listening line only: a server on a
// full disk listens but is not ready.
func (s *server) awaitListening() {
	s.t.Helper()
	select {
	case u := <-s.listen:
		s.url = u
	case <-s.exited:
		s.t.Fatalf("%s exited before listening (%v); output:\n%s", s.name, s.err, s.out.tail(outputTailBytes))
	case <-time.After(startTimeout):
		s.t.Fatalf("%s printed no 'surge: listening on' line within %v", s.name, startTimeout)
	}
	s.c = newClient(s.url, "")
}

// kvOutcome is what a client knows of one PUT.
type kvOutcome int

const (
	kvAcked     kvOutcome = iota // 2xx: must be readable from then on
	kvRefused                    // 507: must never be readable
	kvAmbiguous                  // no reply: either
)

// TestDiskFullRefusesWritesServesReads fills the disk under a running
// server: writes must be refused with 507 storage_full (ledger and
// key-value), never crash it; reads must go on and show only acknowledged
// writes; /readyz and /metrics must say so; and once space is freed,
// writes must resume by themselves with every acknowledged write there
// and no refused one.
func TestDiskFullRefusesWritesServesReads(t *testing.T) {
	skipIfShort(t)
	mnt := mountTmpfs(t, fullDiskMiB)
	srv := start(t, filepath.Join(mnt, "data"), "--memtable-mb", "1", "--shards", "2")
	mustCreateAccount(t, srv.c, NewAccount{ID: "alice", Currency: "USD"})
	before := map[string]kvOutcome{}
	for i := range 20 {
		key := fmt.Sprintf("before-%d", i)
		if r, err := srv.c.kvPut(key, []byte(key)); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("PUT %s: %v %v", key, r, err)
		}
		before[key] = kvAcked
	}
	funded := fundBatches(t, srv.c, "alice", 5)
	free := fillDisk(t, mnt)

	more, refusedTransfer := fundUntilRefused(t, srv.c, "alice")
	funded += more
	kv := putUntilRefused(t, srv.c)
	maps.Copy(kv, before)

	seen := checkAfterFault(t, srv, "alice", funded, kv)
	if refusedTransfer {
		body := metricsBody(t, srv.c)
		if !strings.Contains(body, `surge_storage_write_fault{kind="full",store="ledger"} 1`) {
			t.Errorf("/metrics lacks the ledger's fault:\n%s", grepLines(body, "surge_storage_write_fault"))
		}
	}
	if n := strings.Count(srv.out.String(), "storage refuses writes"); n < 1 || n > 2 {
		t.Errorf("the fault should be logged once per store (at most 2 lines), got %d", n)
	}

	free()
	srv.awaitResumed()
	if again := checkAfterFault(t, srv, "alice", funded, kv); !maps.Equal(seen, again) {
		t.Errorf("writes without a reply read differently before and after the restart (a dirty read): %v, then %v", seen, again)
	}
	r, err := srv.c.kvPut("after-free", []byte("ok"))
	if err != nil || r.Status != http.StatusCreated {
		t.Fatalf("PUT once space is back: %v %v", r, err)
	}
	if _, r, err := srv.c.Transfer(TransferReq{From: "@world", To: "alice", Amount: 1}); err != nil || r.Status/100 != 2 {
		t.Fatalf("transfer once space is back: %v %v", r, err)
	}
}

// TestStartOnFullDisk starts a server on a full disk: it must listen, serve
// reads, refuse writes with 507, say why in /readyz and its log (once, not
// in a loop), and take writes once space is freed.
func TestStartOnFullDisk(t *testing.T) {
	skipIfShort(t)
	mnt := mountTmpfs(t, fullDiskMiB)
	data := filepath.Join(mnt, "data")
	first := start(t, data, "--memtable-mb", "1")
	mustCreateAccount(t, first.c, NewAccount{ID: "alice", Currency: "USD"})
	if _, r, err := first.c.Transfer(TransferReq{ID: "t1", From: "@world", To: "alice", Amount: 42}); err != nil || r.Status/100 != 2 {
		t.Fatalf("transfer: %v %v", r, err)
	}
	if r, err := first.c.kvPut("k", []byte("v")); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("PUT: %v %v", r, err)
	}
	first.stop()
	free := fillDisk(t, mnt)

	srv := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--memtable-mb", "1"}, nil)
	srv.awaitListening()
	poll(t, startTimeout, "/readyz to say the storage is full", func() (bool, string) {
		r, err := srv.c.raw(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return r.Status == http.StatusServiceUnavailable && strings.Contains(string(r.Body), "full"), r.String()
	})
	a, r, err := srv.c.Account("alice")
	if err != nil || r.Status != http.StatusOK || a.Balance != 42 {
		t.Fatalf("read on a full disk: %+v %v %v", a, r, err)
	}
	if r, err := srv.c.kvGet("k"); err != nil || r.Status != http.StatusOK || string(r.Body) != "v" {
		t.Fatalf("key-value read on a full disk: %v %v", r, err)
	}
	if _, r, err := srv.c.Transfer(TransferReq{ID: "t2", From: "@world", To: "alice", Amount: 1}); err != nil || r.Status != http.StatusInsufficientStorage || r.Problem.Code != "storage_full" {
		t.Fatalf("transfer on a full disk: want 507 storage_full, got %v %v", r, err)
	}
	if r, err := srv.c.kvPut("k2", []byte("v2")); err != nil || r.Status != http.StatusInsufficientStorage {
		t.Fatalf("PUT on a full disk: want 507, got %v %v", r, err)
	}
	if lines := strings.Count(srv.out.String(), "\n"); lines > 40 {
		t.Errorf("a server on a full disk should say why once; it wrote %d lines:\n%s", lines, srv.out.tail(4<<10))
	}
	free()
	srv.awaitResumed()
	if _, r, err := srv.c.Transfer(TransferReq{ID: "t2", From: "@world", To: "alice", Amount: 1}); err != nil || r.Status/100 != 2 {
		t.Fatalf("transfer once space is back: %v %v", r, err)
	}
	if a, _, _ := srv.c.Account("alice"); a.Balance != 43 {
		t.Fatalf("balance once space is back: %d, want 43", a.Balance)
	}
}

// awaitResumed waits for a faulted server to restart in place and be
// ready, on the same port.
func (s *server) awaitResumed() {
	s.t.Helper()
	s.pollReady(s.name + " ready again after the disk was freed")
}

// fundUntilRefused funds account in batches of 1,000 transfers until the
// ledger refuses one with 507 storage_full, and returns the sum of what
// was acknowledged. A refused batch must have changed nothing; refused
// reports whether the ledger refused within the bound (the key-value
// store may fill the disk's last bytes first).
func fundUntilRefused(t *testing.T, c *Client, account string) (funded int64, refused bool) {
	t.Helper()
	for i := range 400 {
		reply, r, err := c.Batch(fundingBatch(fmt.Sprintf("full%d", i), account, 1000))
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		switch r.Status {
		case http.StatusOK:
			for _, it := range reply.Results {
				if it.Status/100 == 2 {
					funded++
				}
			}
		case http.StatusInsufficientStorage:
			if r.Problem.Code != "storage_full" {
				t.Fatalf("507 without code storage_full: %v", r)
			}
			t.Logf("ledger refused batch %d with 507 storage_full after %d acknowledged transfers", i, funded)
			return funded, true
		default:
			t.Fatalf("batch %d on a filling disk: want 200 or 507, got %v", i, r)
		}
	}
	t.Logf("the ledger took all %d transfers: its WAL had room", funded)
	return funded, false
}

// fundBatches makes n funding batches of 200 that must all be acknowledged, and
// returns the amount.
func fundBatches(t *testing.T, c *Client, account string, n int) int64 {
	t.Helper()
	for i := range n {
		if _, r, err := c.Batch(fundingBatch(fmt.Sprintf("pre%d", i), account, 200)); err != nil || r.Status != http.StatusOK {
			t.Fatalf("funding batch %d: %v %v", i, r, err)
		}
	}
	return int64(n * 200)
}

// putUntilRefused PUTs 64 KiB values under new keys until the key-value
// store refuses one with 507, then a few more, and returns each key's
// outcome.
func putUntilRefused(t *testing.T, c *Client) map[string]kvOutcome {
	t.Helper()
	out := map[string]kvOutcome{}
	value := []byte(strings.Repeat("v", 64<<10))
	refusals := 0
	for i := 0; i < 2000 && refusals < 5; i++ {
		key := fmt.Sprintf("fill-%04d", i)
		r, err := c.kvPut(key, value)
		switch {
		case err != nil:
			out[key] = kvAmbiguous
		case r.Status == http.StatusCreated:
			out[key] = kvAcked
		case r.Status == http.StatusInsufficientStorage:
			out[key] = kvRefused
			refusals++
		default:
			t.Fatalf("PUT %s on a filling disk: want 201 or 507, got %v", key, r)
		}
	}
	if refusals == 0 {
		t.Fatalf("the key-value store never refused a PUT on a full disk (%d keys)", len(out))
	}
	return out
}

// checkAfterFault checks reads: the account's balance is what was
// acknowledged, each acknowledged key reads back, each refused key is
// absent. It returns the status each write without a reply reads with,
// which may be either but must not change.
func checkAfterFault(t *testing.T, s *server, account string, funded int64, kv map[string]kvOutcome) map[string]int {
	t.Helper()
	seen := map[string]int{}
	a, r, err := s.c.Account(account)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("read %s: %v %v", account, r, err)
	}
	if a.Balance != funded {
		t.Errorf("%s's balance %d, want the %d acknowledged", account, a.Balance, funded)
	}
	for key, o := range kv {
		r, err := s.c.kvGet(key)
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		switch {
		case o == kvAcked && r.Status != http.StatusOK:
			t.Errorf("acknowledged key %s: %v", key, r)
		case o == kvRefused && r.Status != http.StatusNotFound:
			t.Errorf("refused key %s is readable (a dirty read): %v", key, r)
		case o == kvAmbiguous:
			seen[key] = r.Status
		}
	}
	return seen
}

func metricsBody(t *testing.T, c *Client) string {
	t.Helper()
	r, err := c.raw(http.MethodGet, "/metrics", "", nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("/metrics: %v %v", r, err)
	}
	return string(r.Body)
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
