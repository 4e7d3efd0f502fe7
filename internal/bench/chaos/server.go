package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// server is a surge process the bench started.
type server struct {
	cmd        *exec.Cmd
	url        string
	readyAfter time.Duration
	exited     chan struct{}
}

// startServer starts `surge serve` on dir and a free loopback port, with
// extra flags, and waits until /readyz answers 200.
func startServer(ctx context.Context, bin, dir string, log io.Writer, extra ...string) (*server, error) {
	began := time.Now()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "warn"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	found := make(chan string, 1)
	go scanListening(stdout, found)
	select {
	case s.url = <-found:
	case <-s.exited:
		return nil, fmt.Errorf("surge exited before listening")
	case <-time.After(readyTimeout):
		s.kill()
		return nil, errNotReady
	}
	if err := s.awaitReady(ctx); err != nil {
		s.kill()
		return nil, err
	}
	s.readyAfter = time.Since(began)
	return s, nil
}

// scanListening sends the URL of the listening line on found, then keeps
// draining stdout.
func scanListening(r io.Reader, found chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "surge: listening on "); ok {
			found <- strings.TrimSpace(u)
		}
	}
}

func (s *server) awaitReady(ctx context.Context) error {
	return s.awaitReadyz(ctx, func(status int, _ string) bool { return status == http.StatusOK })
}

// kill sends SIGKILL and waits for the process to be reaped.
func (s *server) kill() {
	if s == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// refusesToStart starts surge on dir and reports whether it exited with an
// error naming a damaged WAL, with its output.
func refusesToStart(ctx context.Context, bin, dir string) (bool, string) {
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--data", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err != nil && strings.Contains(out.String(), "is damaged at offset"), out.String()
	case <-time.After(readyTimeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return false, out.String()
	}
}

// flipWAL flips a random byte in the first half of the newest WAL of the
// ledger's store in dir and returns the WAL, the offset and how to undo
// it; an empty WAL is left alone.
func flipWAL(dir string, rng *rand.Rand) (wal string, at int, undo func() error, err error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		return "", 0, nil, err
	}
	slices.Sort(logs) // fixed-width numbers: the newest sorts last
	wal = logs[len(logs)-1]
	b, err := os.ReadFile(wal)
	if err != nil || len(b) < 1024 {
		return "", 0, nil, err
	}
	at = rng.IntN(len(b) / 2)
	orig := b[at]
	b[at] ^= 0x10
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		return "", 0, nil, err
	}
	undo = func() error {
		b[at] = orig
		return os.WriteFile(wal, b, 0o644)
	}
	return wal, at, undo, nil
}
