package front

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
)

// TestFirstSettingsCarryTheStreamLimit reads the first SETTINGS an HTTP/2
// client gets, with and without a gRPC server behind the front: it must
// carry the stream limit. A client that reads a first SETTINGS without
// one takes the limit to be large (Go's: 1,000 streams) and opens that
// many at once; the server then refuses those past its own limit
// (REFUSED_STREAM) until its own SETTINGS are acknowledged.
func TestFirstSettingsCarryTheStreamLimit(t *testing.T) {
	for _, withGRPC := range []bool{false, true} {
		opts := Options{Net: http.NotFoundHandler(), Limits: Limits{MaxStreams: 7}, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
		if withGRPC {
			opts.GRPC = grpc.NewServer()
		}
		addr := serveFront(t, New(opts))
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		s, ok := f.(*http2.SettingsFrame)
		if !ok {
			t.Fatalf("gRPC %v: the first frame is %v, want SETTINGS", withGRPC, f.Header())
		}
		if v, ok := s.Value(http2.SettingMaxConcurrentStreams); !ok || v != 7 {
			t.Errorf("gRPC %v: the first SETTINGS say MAX_CONCURRENT_STREAMS %d (given: %v), want 7", withGRPC, v, ok)
		}
	}
}

// serveFront serves srv on a loopback port until the test ends and
// returns its address.
func serveFront(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

// Only a whole first line whose version is not HTTP's is taken for no
// HTTP at all; anything else goes on to a server.
func TestNotHTTP(t *testing.T) {
	for line, want := range map[string]bool{
		"INVALID CONNECTION PREFACE\r\n\r\n": true,
		"GET / FTP/1.0\r\n":                  true,
		"GET / HTTP/1.1\r\nHost: x\r\n":      false,
		"GET / HTTP/9.9\r\n":                 false, // fasthttp answers it
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n":   false,
		"GET /a-long-path-cut-short":         false,
		"GET / PREF":                         false,
	} {
		if got := notHTTP([]byte(line)); got != want {
			t.Errorf("notHTTP(%q) = %v, want %v", line, got, want)
		}
	}
}
