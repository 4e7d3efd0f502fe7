//go:build unix

package httpc

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// waitReadable blocks until tc has something to report: data, the server's
// FIN or its reset. It consumes nothing. This is how the tests below wait
// for the server's close to reach the client, with no sleeping.
func waitReadable(t *testing.T, tc *net.TCPConn) {
	t.Helper()
	if err := tc.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return rerr != syscall.EAGAIN // false: wait for readiness and call again
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFastIdleConnectionClosedByServer: the server closes a connection
// while it is idle, as on an idle timeout. The next request must notice
// before writing and go out on a new connection, transparently: by the
// idle probe when the server sent a FIN, by the refused write when it
// reset the connection. When neither can tell (the probe is off and the
// server's FIN lets the write through), the request fails and is not
// resent.
func TestFastIdleConnectionClosedByServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reset   bool // close with RST instead of FIN
		probe   bool // check idle connections before writing
		succeed bool
	}{
		{name: "FIN, probed", probe: true, succeed: true},
		{name: "RST, probed", reset: true, probe: true, succeed: true},
		{name: "RST, write refused", reset: true, succeed: true},
		{name: "FIN, not probed", succeed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := hijackServer(t, "") // hijacks only request 1
			requests.Store(1)                    // so every request gets a normal reply
			c := newTestClient(t, HTTPOptions{Target: srv.URL, Conns: 1})
			c.targets[0].fast.idleProbe = time.Hour
			if tc.probe {
				c.targets[0].fast.idleProbe = 0
			}
			ep := c.Endpoint(context.Background(), http.MethodPost, "/")
			if status, reply := sendString(t, ep, "{}"); status != 200 || reply != "ok" {
				t.Fatalf("first request: %d %q", status, reply)
			}
			server := srv.lastConn().(*net.TCPConn)
			if tc.reset {
				_ = server.SetLinger(0)
			}
			_ = server.Close()
			waitReadable(t, ep.fast.(*fastEndpoint).conn.tc)

			status, reply, err := ep.Send(append(ep.Body(), "{}"...))
			switch {
			case tc.succeed && (err != nil || status != 200 || reply == nil):
				t.Fatalf("second request: %d %q %v, want a transparent reconnect", status, reply, err)
			case !tc.succeed && err == nil:
				t.Fatalf("second request succeeded on a closed connection")
			}
			want := int32(3) // the store above, then two requests
			if !tc.succeed {
				want = 2 // the failed request never reached a handler
			}
			if n := requests.Load(); n != want {
				t.Errorf("handlers saw %d requests, want %d", n-1, want-1)
			}
			if n := srv.conns.Load(); tc.succeed && n != 2 {
				t.Errorf("%d connections, want 2", n)
			}
		})
	}
}
