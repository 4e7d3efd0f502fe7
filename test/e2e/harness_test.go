package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Bounds on how long the harness waits for the server; they only cap a wait
// for a condition, so a healthy run never gets near them.
const (
	startTimeout    = 60 * time.Second
	stopTimeout     = 30 * time.Second
	outputTailBytes = 64 << 10
)

// binPath is the surge binary under test, set by TestMain.
var binPath string

// TestMain builds the binary once (unless SURGE_BIN names one) and runs the
// tests against it.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain is TestMain's body, split out so that deferred clean-up runs
// before os.Exit.
func runMain(m *testing.M) int {
	if p := os.Getenv("SURGE_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: SURGE_BIN: %v\n", err)
			return 2
		}
		binPath = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "surge-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 2
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "surge")
	if err := buildBinary(binPath); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building surge: %v\n", err)
		return 1
	}
	return m.Run()
}

// buildBinary runs `go build -o out ./cmd/surge` in the module root.
func buildBinary(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/surge")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, b)
	}
	return nil
}

// moduleRoot finds the directory holding go.mod, walking up from the
// working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// server is one surge process started by a test.
type server struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	out    *procOutput
	listen chan string
	exited chan struct{} // closed once the process has been reaped
	err    error         // the process's exit error, valid after exited
	url    string        // base URL, set once the server listens
	c      *Client       // a client for url, with the API key if any
}

// serverSeq numbers processes so that their logs can be told apart.
var serverSeq atomic.Int64

// start runs `surge serve` on a loopback port with its data in dataDir and
// waits until it is ready. extraArgs are appended to the command line.
func start(t testing.TB, dataDir string, extraArgs ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir}, extraArgs...)
	s := launch(t, args, nil)
	s.awaitReady("")
	return s
}

// launch starts the binary with args and extra environment variables and
// returns at once. Variables named SURGE_* are not inherited, so that the
// caller's environment cannot change the server's configuration. The
// process is killed, if still running, when the test ends, and its output
// is logged if the test failed.
func launch(t testing.TB, args, env []string) *server {
	t.Helper()
	s := &server{
		t:      t,
		name:   fmt.Sprintf("surge#%d", serverSeq.Add(1)),
		out:    &procOutput{},
		listen: make(chan string, 1),
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(binPath, args...)
	s.cmd.Env = append(childEnv(), env...)
	s.cmd.Stdout = &stdoutWatcher{out: s.out, found: s.listen}
	s.cmd.Stderr = s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s %v: %v", binPath, args, err)
	}
	t.Logf("%s: started %s (pid %d)", s.name, strings.Join(args, " "), s.cmd.Process.Pid)
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.cleanup)
	return s
}

// childEnv is the test's environment without SURGE_* variables.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SURGE_") {
			env = append(env, kv)
		}
	}
	return env
}

// cleanup kills the process if it still runs and logs its output when the
// test failed. A process still running when its test failed is stopped with
// SIGQUIT first, which has Go write every goroutine's stack to its stderr:
// what a stuck server was waiting for. The log shows the output's tail
// before the stacks, and names the file holding the whole output.
func (s *server) cleanup() {
	mark := -1
	if !s.isExited() && s.t.Failed() {
		mark = len(s.out.String())
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
		}
	}
	if !s.isExited() {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	if !s.t.Failed() {
		return
	}
	out := s.out.String()
	if mark >= 0 {
		s.t.Logf("%s: whole output, with its goroutines' stacks when the test failed, in %s", s.name, keepOutput(s.name, out))
		out = out[:mark]
	}
	s.t.Logf("%s output (last %d KiB):\n%s", s.name, outputTailBytes>>10, tailOf(out, outputTailBytes))
}

// keepOutput writes a process's output to a file that outlives the test
// and returns its path (or why there is none).
func keepOutput(name, out string) string {
	f, err := os.CreateTemp("", "surge-e2e-"+strings.TrimPrefix(name, "surge#")+"-*.log")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.WriteString(out); err != nil {
		return err.Error()
	}
	return f.Name()
}

// isExited reports whether the process has been reaped.
func (s *server) isExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// awaitReady waits for the listening line on stdout, then polls /readyz
// until it answers 200. key is the API key the client should send.
func (s *server) awaitReady(key string) {
	s.t.Helper()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case u := <-s.listen:
		s.url = u
	case <-s.exited:
		s.t.Fatalf("%s exited before listening (%v); output:\n%s", s.name, s.err, s.out.tail(outputTailBytes))
	case <-deadline.C:
		s.t.Fatalf("%s printed no 'surge: listening on' line within %v", s.name, startTimeout)
	}
	s.c = newClient(s.url, key)
	s.pollReady(s.name + " /readyz 200")
}

// pollReady polls /readyz until it answers 200; the process must not exit
// meanwhile.
func (s *server) pollReady(what string) {
	s.t.Helper()
	poll(s.t, startTimeout, what, func() (bool, string) {
		if s.isExited() {
			s.t.Fatalf("%s exited while recovering (%v)", s.name, s.err)
		}
		resp, err := s.c.raw(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == http.StatusOK, resp.String()
	})
}

// stop sends SIGTERM, waits for the process to exit and checks that it
// shut down cleanly (exit status 0).
func (s *server) stop() {
	s.t.Helper()
	if s.c != nil {
		// A connection the client dialled but never used counts as busy
		// for up to 5 s in net/http's graceful shutdown; a client that is
		// done closes its connections.
		s.c.hc.CloseIdleConnections()
	}
	began := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait()
	s.t.Logf("%s: stopped by SIGTERM in %v", s.name, time.Since(began).Round(time.Millisecond))
	if s.err != nil {
		s.t.Errorf("%s: SIGTERM should shut down cleanly, exit: %v", s.name, s.err)
	}
}

// kill sends SIGKILL (kill -9) and waits for the process to die.
func (s *server) kill() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait()
}

// wait waits, bounded by stopTimeout, for the process to exit.
func (s *server) wait() {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		s.t.Fatalf("%s did not exit within %v", s.name, stopTimeout)
	}
}

// procOutput collects a process's stdout and stderr, interleaved as written.
type procOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (o *procOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// tail returns at most the last n bytes written.
func (o *procOutput) tail(n int) string { return tailOf(o.String(), n) }

// tailOf is at most the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// listenLine matches the line the server prints once it listens.
var listenLine = regexp.MustCompile(`surge: listening on (https?://\S+)`)

// stdoutWatcher copies stdout into a procOutput and sends the base URL of
// the first listening line on found.
type stdoutWatcher struct {
	out   *procOutput
	found chan<- string
	line  []byte
	done  bool
}

// Write records p and scans its complete lines for the listening line.
func (w *stdoutWatcher) Write(p []byte) (int, error) {
	_, _ = w.out.Write(p)
	if w.done {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for !w.done {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		if m := listenLine.FindSubmatch(w.line[:i]); m != nil {
			w.found <- dialable(string(m[1]))
			w.done = true
		}
		w.line = w.line[i+1:]
	}
	return len(p), nil
}

// dialable rewrites a wildcard listening address into a loopback one that a
// client can connect to.
func dialable(raw string) string {
	raw = strings.TrimRight(raw, ".,;)")
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	switch u.Hostname() {
	case "0.0.0.0", "::", "":
		u.Host = "127.0.0.1:" + u.Port()
	}
	return strings.TrimRight(u.String(), "/")
}

// poll calls cond until it reports true, failing the test if that does not
// happen within timeout. cond's string describes the last observation.
// Polling waits on a condition; the interval only spaces the attempts.
func poll(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s", timeout, what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
