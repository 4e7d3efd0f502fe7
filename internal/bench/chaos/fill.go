package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A run with Config.FillMiB puts the data directory on a tmpfs of that
// size, mounted for the run, and fills it once in every cycle, halfway to
// the kill: surge must refuse writes and say so on /readyz, go on with
// reads, and take writes again by itself once the filler file is
// removed; the kill and the audit follow as in any cycle.

// errNeedsRoot is why a disk cannot be filled here.
var errNeedsRoot = errors.New("chaos: filling a disk needs root, to mount a tmpfs")

// mountDisk mounts a tmpfs of mib MiB on a new directory.
func mountDisk(mib int) (string, error) {
	if os.Geteuid() != 0 {
		return "", errNeedsRoot
	}
	mnt, err := os.MkdirTemp("", "surge-chaos-disk-")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", mib), "tmpfs", mnt).CombinedOutput(); err != nil {
		_ = os.Remove(mnt)
		return "", fmt.Errorf("chaos: mount a tmpfs: %v: %s", err, out)
	}
	return mnt, nil
}

// unmountDisk unmounts and removes what mountDisk made.
func unmountDisk(mnt string) error {
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: umount %s: %v: %s", mnt, err, out)
	}
	return os.Remove(mnt)
}

// fillDisk writes a file in mnt until no space is left, and returns it.
func fillDisk(mnt string) (string, error) {
	p := filepath.Join(mnt, "filler")
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return "", err
				}
				break
			}
		}
	}
	return p, nil
}

// fillCycle fills the disk under the running server, waits for /readyz to
// say the storage is full, frees the disk and waits for the server to be
// ready again (it restarts in place), counting what it saw. It reports
// whether writes resumed.
func (r *run) fillCycle(ctx context.Context) bool {
	filler, err := fillDisk(r.mnt)
	if err != nil {
		fmt.Fprintf(r.cfg.Log, "chaos: fill the disk: %v\n", err)
		return false
	}
	r.rep.fills++
	full := r.srv.awaitReadyz(ctx, func(status int, body string) bool {
		return status == http.StatusServiceUnavailable && strings.Contains(body, "full")
	})
	if err := os.Remove(filler); err != nil {
		fmt.Fprintf(r.cfg.Log, "chaos: free the disk: %v\n", err)
		return false
	}
	if full != nil {
		fmt.Fprintf(r.cfg.Log, "chaos: the disk was full and /readyz did not say so: %v\n", full)
		return false
	}
	if err := r.srv.awaitReady(ctx); err != nil {
		fmt.Fprintf(r.cfg.Log, "chaos: writes did not resume once the disk was freed: %v\n", err)
		return false
	}
	r.rep.fillsResumed++
	fmt.Fprintf(r.cfg.Log, "chaos: disk filled: writes refused, then resumed once freed\n")
	return true
}

// awaitReadyz polls /readyz until want accepts its answer.
func (s *server) awaitReadyz(ctx context.Context, want func(status int, body string) bool) error {
	deadline := time.Now().Add(readyTimeout)
	hc := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("surge exited")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := hc.Get(s.url + "/readyz"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want(resp.StatusCode, string(body)) {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	return fmt.Errorf("%w: last /readyz: %s", errNotReady, last)
}
