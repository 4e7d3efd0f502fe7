package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tableFlipCycle flips a byte of a random table file of the stopped
// server's stores (the ledger's or the key-value one), starts it and
// checks that it reports the damage naming the file: it refuses to start,
// or /readyz answers 503 naming it. Then it stops it and restores the
// byte. A table the start deletes (obsolete, left behind by the kill) is
// not counted.
func (r *run) tableFlipCycle(ctx context.Context) error {
	table, undo, err := flipTable(filepath.Clean(r.cfg.Dir), r.rng)
	if err != nil || table == "" {
		return err
	}
	reported, output := reportsDamage(ctx, r.cfg.Binary, r.cfg.Dir, table)
	if _, err := os.Stat(table); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	r.rep.tableFlips++
	if reported {
		r.rep.tableFlipsReported++
	} else {
		fmt.Fprintf(r.cfg.Log, "chaos: a byte flipped in %s was not reported:\n%s\n", table, output)
	}
	return undo()
}

// flipTable flips a random byte of a random table file of the ledger's
// store in dir or of its key-value store, and returns the file and how to
// undo it; with no table yet, it returns "".
func flipTable(dir string, rng *rand.Rand) (table string, undo func() error, err error) {
	var tables []string
	for _, d := range []string{dir, filepath.Join(dir, "kv")} {
		found, err := filepath.Glob(filepath.Join(d, "*.sst"))
		if err != nil {
			return "", nil, err
		}
		tables = append(tables, found...)
	}
	if len(tables) == 0 {
		return "", nil, nil
	}
	table = tables[rng.IntN(len(tables))]
	b, err := os.ReadFile(table)
	if err != nil || len(b) == 0 {
		return "", nil, err
	}
	at := rng.IntN(len(b))
	b[at] ^= 0x10
	if err := os.WriteFile(table, b, 0o644); err != nil {
		return "", nil, err
	}
	undo = func() error {
		b[at] ^= 0x10
		return os.WriteFile(table, b, 0o644)
	}
	return table, undo, nil
}

// reportsDamage starts surge on dir and reports whether it names table as
// damaged: exiting with an error that names it, or answering /readyz 503
// naming it. It stops waiting once surge says it checked every table file
// of both stores, and kills and reaps surge before it returns.
func reportsDamage(ctx context.Context, bin, dir, table string) (bool, string) {
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "info")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The next start on dir must find Pebble's lock free: the process is
	// reaped, not only signalled, before this returns.
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}()
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(readyTimeout); time.Now().Before(deadline); {
		select {
		case err := <-exited:
			exited <- err
			return err != nil && strings.Contains(out.String(), table), out.String()
		default:
		}
		text := out.String()
		if u, ok := listeningURL(text); ok {
			if resp, err := hc.Get(u + "/readyz"); err == nil {
				var body bytes.Buffer
				_, _ = body.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body.String(), table) {
					return true, text
				}
			}
		}
		if strings.Count(text, "table files checked") == 2 {
			return false, text
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	return false, out.String()
}

// listeningURL finds the URL of surge's listening line in its output.
func listeningURL(out string) (string, bool) {
	_, rest, ok := strings.Cut(out, "surge: listening on ")
	if !ok {
		return "", false
	}
	u, _, ok := strings.Cut(rest, "\n")
	return strings.TrimSpace(u), ok
}

// lockedBuffer is a process's output, written and read concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
