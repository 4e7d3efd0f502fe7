package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a certificate authority a test makes for itself, and the
// certificates it issues, written as PEM files under dir.
type testPKI struct {
	dir    string
	caFile string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
}

// newTestPKI makes a certificate authority named name in a new
// directory.
func newTestPKI(t testing.TB, name string) *testPKI {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: t.TempDir(), ca: ca, caKey: key, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = filepath.Join(p.dir, name+"-ca.pem")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	return p
}

// issued is a certificate the test's authority signed, in its files.
type issued struct {
	certFile, keyFile string
	leaf              *x509.Certificate
}

// issue signs a certificate for hosts (IP addresses or DNS names) usable
// as a server's and a client's, and writes it and its key (PKCS#8) to
// certFile and keyFile, or to name.pem and name-key.pem under p.dir when
// they are empty.
func (p *testPKI) issue(t testing.TB, name, certFile, keyFile string, hosts ...string) issued {
	t.Helper()
	if certFile == "" {
		certFile, keyFile = filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	}
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "PRIVATE KEY", pkcs8)
	writePEM(t, certFile, "CERTIFICATE", der)
	leaf, _ := x509.ParseCertificate(der)
	return issued{certFile: certFile, keyFile: keyFile, leaf: leaf}
}

// clientTLS trusts p's authority, showing the certificate c if not nil.
func (p *testPKI) clientTLS(t testing.TB, c *issued) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool}
	if c != nil {
		pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// template is a certificate named name with a random serial, valid from
// an hour ago for a day.
func template(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

// writePEM writes one PEM block to name, readable by its owner only.
func writePEM(t testing.TB, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
