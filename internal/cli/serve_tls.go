package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/certs"
	"github.com/surge-dev/surge/internal/lifecycle"
)

// tlsConfig holds the flags of TLS on the port (docs/OPERATIONS.md,
// "TLS").
type tlsConfig struct {
	cert, key, clientCA  string
	plaintextBehindProxy bool
}

func addTLSFlags(f *pflag.FlagSet, c *tlsConfig) {
	f.StringVar(&c.cert, "tls-cert", "", "PEM certificate (with its chain) to serve TLS with on the port; reloaded at the first handshake after the file changes, so rotating it needs no restart")
	f.StringVar(&c.key, "tls-key", "", "PEM private key of --tls-cert (reloaded with it)")
	f.StringVar(&c.clientCA, "tls-client-ca", "", "PEM certificate authorities whose client certificate every connection must show (mutual TLS); empty: none asked")
	f.BoolVar(&c.plaintextBehindProxy, "plaintext-behind-proxy", false, "serve plaintext off loopback because a TLS-terminating proxy in front of surge is what clients reach; without it, listening off loopback needs --tls-cert and --tls-key")
}

// enabled reports whether the port serves TLS.
func (c tlsConfig) enabled() bool { return c.cert != "" || c.key != "" }

// check refuses TLS flags that cannot work together.
func (c tlsConfig) check() error {
	switch {
	case (c.cert == "") != (c.key == ""):
		return errors.New("--tls-cert and --tls-key go together: give both to serve TLS")
	case c.clientCA != "" && !c.enabled():
		return errors.New("--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
	case c.plaintextBehindProxy && c.enabled():
		return errors.New("--plaintext-behind-proxy says the port serves plaintext, --tls-cert that it serves TLS: give one")
	}
	return nil
}

// server is the port's TLS, or nil when it serves plaintext. ALPN offers
// HTTP/2 first: the front door routes each connection by the bytes it
// reads once the handshake is done, as it does in plaintext.
func (c tlsConfig) server(log *slog.Logger) (*tls.Config, error) {
	if !c.enabled() {
		return nil, nil
	}
	reloader, err := certs.NewReloader(c.cert, c.key, log)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		GetCertificate: reloader.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
		MinVersion:     tls.VersionTLS12,
		// HTTP/2 forbids TLS 1.2's suites without forward secrecy or AEAD
		// (RFC 9113, section 9.2.2); TLS 1.3's are all allowed.
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
	if c.clientCA != "" {
		pool, err := certs.Pool(c.clientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// openPort listens on c.addr (or takes over a restarting surge's socket),
// says where on out, and returns the socket with the TLS to serve it with
// (nil: plaintext). The socket stays a bare *net.TCPListener because the
// recovery server and a restart in place hand it over; wrap it with
// secured to serve.
func openPort(c serveConfig, out io.Writer, log *slog.Logger) (net.Listener, *tls.Config, error) {
	tc, err := c.tls.server(log)
	if err != nil {
		return nil, nil, err
	}
	ln, err := lifecycle.Listen(c.addr)
	if err != nil {
		return nil, nil, err
	}
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	fmt.Fprintf(out, "surge: listening on %s://%s\n", scheme, ln.Addr())
	return ln, tc, nil
}

// secured is ln serving TLS with tc, or ln itself when tc is nil. The
// handshake runs on a connection's first read, which the front door makes
// in the connection's own goroutine under --header-timeout, so a slow
// handshake holds up no other connection.
func secured(ln net.Listener, tc *tls.Config) net.Listener {
	if tc == nil {
		return ln
	}
	return tlsListener{Listener: ln, config: tc}
}

// tlsListener accepts TLS connections whose handshake waits for their
// first read.
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: tls.Server(c, l.config)}, nil
}

// errUnshaken refuses a write to a connection nobody has read from.
var errUnshaken = errors.New("tls: nothing is written before the client's handshake is read")

// serverConn is a TLS connection that writes nothing before it has been
// read from. Every server reads a connection's first bytes before it
// writes, except the front door refusing a connection past --max-conns as
// it accepts it: over TLS that plaintext answer would be noise to the
// client, and writing it would run the handshake in the accept loop,
// waiting on a client that may never send its hello. Such a connection is
// closed without an answer.
type serverConn struct {
	*tls.Conn
	read atomic.Bool
}

func (c *serverConn) Read(p []byte) (int, error) {
	c.read.Store(true)
	return c.Conn.Read(p)
}

func (c *serverConn) Write(p []byte) (int, error) {
	if !c.read.Load() {
		return 0, errUnshaken
	}
	return c.Conn.Write(p)
}
