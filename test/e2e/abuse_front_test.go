package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The abuse suite: what an attacker, a bot farm or a retrying client does
// to the front door, against the real binary over real sockets. Each test
// asserts the bound the server keeps (docs/OPERATIONS.md, "Limits").

// rawConn is a client connection that writes bytes verbatim and reads
// HTTP/1.1 replies.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func openRaw(t *testing.T, s *server) *rawConn {
	t.Helper()
	c, _ := dialRaw(t, s.url)
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// reply reads one response.
func (rc *rawConn) reply() (*http.Response, []byte, error) {
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// closed reports whether the server closed the connection: a further
// request on it gets no reply.
func (rc *rawConn) closed() bool {
	// The write may fail on a closed connection, or succeed into a
	// socket the server has closed; either way no reply comes.
	_, _ = io.WriteString(rc.c, "GET /healthz HTTP/1.1\r\nHost: surge\r\n\r\n")
	_, _, err := rc.reply()
	return err != nil
}

// headerOnly is a request that declares a body of n bytes and sends none.
func headerOnly(path, auth string, n int) string {
	h := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: surge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, n)
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	return h + "\r\n"
}

// metric returns the value of the sample named series (name with its
// labels, as /metrics prints it), or -1 if there is none.
func metric(t testing.TB, s *server, series string) float64 {
	t.Helper()
	resp, err := s.c.raw(http.MethodGet, "/metrics", "", nil)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return sample(t, resp.Body, series)
}

// sample returns the value of series in a /metrics page, or -1 if there
// is none.
func sample(t testing.TB, page []byte, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(string(page), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// rssMiB is the resident set of process pid, in MiB.
func rssMiB(t testing.TB, pid int) int { return procStatusMiB(t, pid, "VmRSS") }

// peakRSSMiB is the peak resident set of process pid, in MiB.
func peakRSSMiB(t testing.TB, pid int) int { return procStatusMiB(t, pid, "VmHWM") }

// procStatusMiB reads field (a size in kB) of process pid's
// /proc/PID/status, in MiB.
func procStatusMiB(t testing.TB, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's %s: %v", field, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("%s %q: %v", field, v, err)
			}
			return kb >> 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// raiseFileLimit lifts the test process's RLIMIT_NOFILE to at least n, or
// skips the test if the hard limit is lower.
func raiseFileLimit(t testing.TB, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d", lim.Max, n)
	}
	if lim.Cur < n {
		lim.Cur = n
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAbuseHeaderOnlyBodiesKeepMemoryBounded: 5,000 connections each
// declare a 4 MiB body and send only their headers, holding the server's
// reads open. The server must stay under its memory limit while a normal
// client's transfers still succeed. A server that allocates declared
// bodies up front needs 20 GB for them; the test stops adding connections
// as soon as the limit is crossed.
func TestAbuseHeaderOnlyBodiesKeepMemoryBounded(t *testing.T) {
	const conns, limitMiB, key = 5000, 512, "abuse-key"
	raiseFileLimit(t, 2*conns+1000)
	s := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", key,
		"--memory-limit-mb", strconv.Itoa(limitMiB), "--max-conns", strconv.Itoa(conns + 100),
		"--max-conns-per-client", strconv.Itoa(conns + 100), "--header-timeout", "10m"}, nil)
	s.awaitReady(key)
	openAccounts(t, s.c, "alice", "bob")
	fund(t, s.c, "alice", 1_000_000)
	base := rssMiB(t, s.cmd.Process.Pid)
	for i := range conns {
		rc := openRaw(t, s)
		// Half with the key, half without: neither may make the server
		// hold a body it has not admitted.
		auth := ""
		if i%2 == 0 {
			auth = "Bearer " + key
		}
		rc.send(headerOnly("/v1/transfers", auth, 4<<20))
		if i%250 == 249 {
			if rss := rssMiB(t, s.cmd.Process.Pid); rss > limitMiB {
				t.Fatalf("after %d header-only connections RSS is %d MiB, over --memory-limit-mb %d (it was %d MiB)", i+1, rss, limitMiB, base)
			}
		}
	}
	// Every connection is accepted and held (the last ones may still wait
	// in the listen backlog).
	poll(t, startTimeout, "every connection to be accepted", func() (bool, string) {
		open := metric(t, s, "surge_front_connections")
		return open >= conns, fmt.Sprint(open)
	})
	for i := range 20 {
		mustTransfer(t, s.c, TransferReq{ID: fmt.Sprintf("normal-%d", i), From: "alice", To: "bob", Amount: 1})
	}
	rss := rssMiB(t, s.cmd.Process.Pid)
	t.Logf("RSS with %d header-only 4 MiB connections: %d MiB (before: %d MiB, limit %d MiB)", conns, rss, base, limitMiB)
	if rss > limitMiB {
		t.Fatalf("RSS %d MiB over --memory-limit-mb %d", rss, limitMiB)
	}
}

// TestAbuseMaxConns: past --max-conns a new connection is refused at once
// (503 or closed) instead of being served, and the refusal is counted.
func TestAbuseMaxConns(t *testing.T) {
	const limit = 20
	s := start(t, t.TempDir(), "--max-conns", strconv.Itoa(limit), "--max-conns-per-client", strconv.Itoa(limit))
	s.c.hc.CloseIdleConnections()
	var held []*rawConn
	for range limit {
		rc := openRaw(t, s)
		rc.send("GET /healthz HTTP/1.1\r\nHost: surge\r\n\r\n")
		if resp, _, err := rc.reply(); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a connection under the limit: %v %v", resp, err)
		}
		held = append(held, rc)
	}
	extra := openRaw(t, s)
	extra.send("GET /healthz HTTP/1.1\r\nHost: surge\r\n\r\n")
	resp, body, err := extra.reply()
	if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection %d past --max-conns %d: %s %s, want 503 or a closed connection", limit+1, limit, resp.Status, body)
	}
	if err == nil && resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	for _, rc := range held {
		_ = rc.c.Close()
	}
	poll(t, startTimeout, "a connection slot to free up", func() (bool, string) {
		resp, err := s.c.raw(http.MethodGet, "/healthz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == http.StatusOK, resp.String()
	})
	if n := metric(t, s, `surge_front_rejected_total{reason="max_conns"}`); n < 1 {
		t.Fatalf(`surge_front_rejected_total{reason="max_conns"} = %v, want >= 1`, n)
	}
}

// TestAbuseUnauthenticatedBodyRefusedUnread: a keyed route refuses a body
// without the key at once, from its headers, and closes the connection
// rather than read 4 MiB for a request it will refuse.
func TestAbuseUnauthenticatedBodyRefusedUnread(t *testing.T) {
	s := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", "k"}, nil)
	s.awaitReady("k")
	rc := openRaw(t, s)
	// 8 KiB of the body: more than a server reads before its handler runs.
	rc.send(headerOnly("/v1/transfers", "", 4<<20) + strings.Repeat(" ", 8<<10))
	resp, body, err := rc.reply()
	if err != nil {
		t.Fatalf("no reply before the body was sent: %v", err)
	}
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(body, []byte(`"unauthorized"`)) {
		t.Fatalf("got %s %s, want 401 unauthorized", resp.Status, body)
	}
	if !rc.closed() {
		t.Fatal("connection left open with an unread body")
	}
}

// TestAbuseBodyBudget: bodies are charged against --body-budget-mb as
// they arrive; a body that arrives past it is refused at once with 503
// overloaded and Retry-After, not queued.
func TestAbuseBodyBudget(t *testing.T) {
	s := start(t, t.TempDir(), "--body-budget-mb", "5", "--header-timeout", "10m")
	first := openRaw(t, s)
	// All of a 4 MiB body but its last byte: the server holds what came.
	first.send(headerOnly("/v1/transfers/batch", "", 4<<20) + strings.Repeat(" ", 4<<20-1))
	poll(t, startTimeout, "the first body to arrive", func() (bool, string) {
		v := metric(t, s, "surge_front_body_bytes")
		return v >= 4<<20-1, fmt.Sprint(v)
	})
	second := openRaw(t, s)
	go func() { // 2 MiB more than the budget has left; refused on the way
		_, _ = io.WriteString(second.c, headerOnly("/v1/transfers/batch", "", 4<<20)+strings.Repeat(" ", 2<<20))
	}()
	resp, body, err := second.reply()
	if err != nil {
		t.Fatalf("no reply to a body over the budget: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!bytes.Contains(body, []byte(`"overloaded"`)) {
		t.Fatalf("got %s (Retry-After %q) %s, want 503 overloaded with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if n := metric(t, s, `surge_front_rejected_total{reason="body_budget"}`); n != 1 {
		t.Fatalf(`surge_front_rejected_total{reason="body_budget"} = %v, want 1`, n)
	}
}

// TestAbuseSmugglingFraming: Content-Length with Transfer-Encoding, or two
// Transfer-Encoding headers, is refused and the connection closed (RFC
// 9112 §6.1), on every path a connection can take.
func TestAbuseSmugglingFraming(t *testing.T) {
	s := start(t, t.TempDir())
	cases := map[string]string{
		"CL+TE":  "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"TE+CL":  "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"TE×2":   "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"TE,id":  "Transfer-Encoding: identity\r\nContent-Length: 5\r\n",
		"lowerC": "content-length: 5\r\ntransfer-encoding: chunked\r\n",
	}
	for name, framing := range cases {
		for _, target := range []string{"POST /v1/transfers", "POST /v1/event/e/reservation", "PUT /v0/entity?id=k"} {
			t.Run(name+target, func(t *testing.T) {
				rc := openRaw(t, s)
				rc.send(target + " HTTP/1.1\r\nHost: surge\r\n" + framing + "\r\n0\r\n\r\n")
				resp, body, err := rc.reply()
				if err == nil && resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("got %s %s, want 400 or a closed connection", resp.Status, body)
				}
				if err == nil && !rc.closed() {
					t.Fatal("connection kept after ambiguous framing")
				}
			})
		}
	}
}
