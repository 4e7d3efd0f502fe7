package h2

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/surge-dev/surge/internal/front/h2/h2spectest"
)

// TestH2Spec runs h2spec against a Server of a handler that reads the
// request's body and answers with one: every case must pass.
func TestH2Spec(t *testing.T) {
	bin := h2spectest.Build(t)
	addr := serveTest(t, &Server{Handler: http.HandlerFunc(readThenAnswer)})
	got, err := h2spectest.Run(bin, addr, "/", filepath.Join(t.TempDir(), "report.xml"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != h2spectest.Cases {
		t.Errorf("h2spec ran %d cases, want %d", len(got), h2spectest.Cases)
	}
	for name, outcome := range got {
		if outcome != "pass" {
			t.Errorf("%s: %s", name, outcome)
		}
	}
}

// readThenAnswer reads the whole body, then answers with a short one.
func readThenAnswer(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "conformance")
}

// serveTest serves with s on a loopback port until the test ends, and
// returns the address; handlers' panics are not logged.
func serveTest(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.ServeConn(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); _ = s.Shutdown(t.Context()) })
	return ln.Addr().String()
}
