package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/lifecycle"
)

// selfSignedTLS is a server TLS config for 127.0.0.1 and a client config
// that trusts it.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"h2", "http/1.1"}},
		&tls.Config{RootCAs: pool}
}

// TestStartingServerSpeaksTLS: while recovering, a TLS port answers
// HTTP/2 clients (chosen by ALPN) as well as HTTP/1.1 ones.
func TestStartingServerSpeaksTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server, client := selfSignedTLS(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := lifecycle.ServeStarting(ln, server, log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(log) }()
	for _, h2 := range []bool{false, true} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: client.Clone(), ForceAttemptHTTP2: h2}}
		res, err := hc.Get("https://" + ln.Addr().String() + "/readyz")
		if err != nil {
			t.Fatalf("h2=%v: %v", h2, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "recovering") || (res.ProtoMajor == 2) != h2 {
			t.Errorf("h2=%v: %s %d %q", h2, res.Proto, res.StatusCode, b)
		}
	}
}

// TestSecuredWritesNothingBeforeReading: a connection refused as it is
// accepted (past --max-conns) is not made to run its handshake in the
// accept loop: the write fails at once, even with a client that never
// sends its hello, and closing it does not wait for one.
func TestSecuredWritesNothingBeforeReading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server, _ := selfSignedTLS(t)
	sl := secured(ln, server)
	defer sl.Close()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	c, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// Only a bound should the write wait for the handshake.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\n\r\n")); !errors.Is(err, errUnshaken) {
		t.Fatalf("write before any read: %v, want errUnshaken", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the silent client's read: %v, want EOF (closed without an answer)", err)
	}
}
