package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate named cn and its key to
// temporary files and returns their contents.
func selfSigned(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
}

// replace writes b to name through a rename, as a rotation does.
func replace(t *testing.T, name string, b []byte) {
	t.Helper()
	tmp := name + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

func servedName(t *testing.T, r *Reloader) string {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.Subject.CommonName
}

// TestReloaderFollowsRotation: a changed pair is served from the next
// handshake on; a pair that does not match leaves the last good one in
// service until both files are replaced.
func TestReloaderFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certA, keyA := selfSigned(t, "a")
	replace(t, certFile, certA)
	replace(t, keyFile, keyA)
	r, err := NewReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got := servedName(t, r); got != "a" {
		t.Fatalf("serves %q, want a", got)
	}
	certB, keyB := selfSigned(t, "b")
	replace(t, keyFile, keyB)
	if got := servedName(t, r); got != "a" {
		t.Fatalf("with a's certificate and b's key: serves %q, want a kept", got)
	}
	replace(t, certFile, certB)
	if got := servedName(t, r); got != "b" {
		t.Fatalf("after both files changed: serves %q, want b", got)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if got := servedName(t, r); got != "b" {
		t.Fatalf("with the key file gone: serves %q, want b kept", got)
	}
}

func TestNewReloaderRefusesMismatch(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certA, _ := selfSigned(t, "a")
	_, keyB := selfSigned(t, "b")
	replace(t, certFile, certA)
	replace(t, keyFile, keyB)
	if _, err := NewReloader(certFile, keyFile, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a certificate with another's key was accepted")
	}
}
