// Package certs loads the PEM files of surge's TLS: the server's own
// certificate, reloaded when its files change so that rotation needs no
// restart, and the certificate authorities and client certificates that
// verify a peer (mutual TLS on the port, TLS to Kafka's brokers).
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
)

// Reloader serves a certificate and its key from two PEM files, loading
// them again at the first handshake after either file changes. A pair that
// does not load (a key written before its certificate, say) leaves the
// last good one in service until the files change again.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp // of the files the last load attempt read
}

// fileStamp tells one version of a file from the next: a rename over it
// changes the inode, a rewrite in place its time or size.
type fileStamp struct {
	ino, size    int64
	mtime, ctime syscall.Timespec
	dev          uint64
}

// NewReloader loads certFile and keyFile, failing if they do not make a
// certificate.
func NewReloader(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := r.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.stamp = &cert, stamp
	return r, nil
}

// GetCertificate is tls.Config's: the certificate in service, reloaded
// first if its files changed. Two stat calls per handshake are what
// noticing a change costs, next to a handshake's public-key work.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp, err := r.stamps()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || stamp == r.stamp {
		return r.cert, nil // a file missing mid-rotation: keep serving the last good pair
	}
	r.stamp = stamp
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("TLS certificate not reloaded; the previous one stays in service", "cert", r.certFile, "key", r.keyFile, "err", err)
		return r.cert, nil
	}
	r.cert = &cert
	r.log.Info("TLS certificate reloaded", "cert", r.certFile, "subject", cert.Leaf.Subject.String(), "not_after", cert.Leaf.NotAfter)
	return r.cert, nil
}

// stamps stats both files.
func (r *Reloader) stamps() ([2]fileStamp, error) {
	var out [2]fileStamp
	for i, name := range []string{r.certFile, r.keyFile} {
		var st syscall.Stat_t
		if err := syscall.Stat(name, &st); err != nil {
			return out, &os.PathError{Op: "stat", Path: name, Err: err}
		}
		out[i] = fileStamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim, ctime: st.Ctim, dev: st.Dev}
	}
	return out, nil
}

// Pool reads the PEM certificates of caFile into a pool.
func Pool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", caFile)
	}
	return pool, nil
}

// Client is the TLS of a client that dials servers whose certificates
// caFile's authorities sign (the system's when caFile is empty), showing
// the certificate of certFile and keyFile when they are given.
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := Pool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
