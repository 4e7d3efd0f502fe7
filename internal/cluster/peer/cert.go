package peer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// A node's peer certificate is self-signed, made at its first start and
// kept in its data directory (peer.crt, peer.key). Nodes trust no
// authority: each pins the certificates whose fingerprints (SHA-256 of the
// DER) the cluster's nodes published in the nodes topic (directory.go),
// both ways.

// loadCert reads the node's peer certificate from dir, or makes one and
// keeps it there.
func loadCert(dir, node string) (tls.Certificate, error) {
	crt, key := filepath.Join(dir, "peer.crt"), filepath.Join(dir, "peer.key")
	c, err := tls.LoadX509KeyPair(crt, key)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return c, err
	}
	certPEM, keyPEM, err := selfSigned(node)
	if err != nil {
		return tls.Certificate{}, err
	}
	for _, f := range []struct {
		path string
		b    []byte
	}{{key, keyPEM}, {crt, certPEM}} {
		if err := os.WriteFile(f.path+".tmp", f.b, 0o600); err != nil {
			return tls.Certificate{}, err
		}
		if err := os.Rename(f.path+".tmp", f.path); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// selfSigned makes a P-256 certificate for node, signed by its own key.
func selfSigned(node string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "surge node " + node},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(100, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("peer: making a certificate: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// fingerprint is the hex SHA-256 of a certificate's DER.
func fingerprint(der []byte) string {
	h := sha256.Sum256(der)
	return hex.EncodeToString(h[:])
}

// errUnknownPeer refuses a certificate no node published.
var errUnknownPeer = errors.New("peer: certificate of no node of the cluster")

// pinned verifies that the peer's certificate is one ok accepts.
func pinned(ok func(fp string) bool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 || !ok(fingerprint(raw[0])) {
			return errUnknownPeer
		}
		return nil
	}
}

// protocol names the links' protocol in the TLS handshake (ALPN): a
// client offering only another, a node of a release whose links speak
// another, is refused during the handshake, and its commands go through
// Kafka.
const protocol = "surge-peer/1"

// serverTLS accepts the connections of clients showing a certificate
// known says a node published.
func serverTLS(cert tls.Certificate, known func(fp string) bool) *tls.Config {
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{cert},
		NextProtos:            []string{protocol},
		ClientAuth:            tls.RequireAnyClientCert,
		VerifyPeerCertificate: pinned(known),
	}
}

// clientTLS reaches the node whose certificate's fingerprint is fp. The
// chain is not checked against authorities (there are none): the pin
// replaces it.
func clientTLS(cert tls.Certificate, fp string) *tls.Config {
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{cert},
		NextProtos:            []string{protocol},
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: pinned(func(got string) bool { return got == fp }),
	}
}
