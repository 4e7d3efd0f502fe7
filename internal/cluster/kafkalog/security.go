package kafkalog

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/surge-dev/surge/internal/certs"
)

// Security is how a node reaches brokers whose listeners have security
// on: TLS (SSL, SASL_SSL) and SASL (SASL_PLAINTEXT, SASL_SSL). The zero
// value is PLAINTEXT.
type Security struct {
	// TLS is on when any of its files is given, or TLS is set: CAFile
	// holds the authorities that sign the brokers' certificates (the
	// system's if empty); CertFile and KeyFile a client certificate, for
	// brokers that require one.
	TLS                       bool
	CAFile, CertFile, KeyFile string
	// Mechanism is the SASL mechanism: PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512; empty: no SASL.
	Mechanism, User, Password string
}

// Mechanisms are the SASL mechanisms Security takes.
var Mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Options are the franz-go options that connect with s; Config.Dial takes
// them.
func (s Security) Options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" {
		tc, err := certs.Client(s.CAFile, s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka TLS: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if s.Mechanism == "" {
		if s.User != "" {
			return nil, errors.New("kafka SASL: a user without a mechanism")
		}
		return opts, nil
	}
	mech, err := s.mechanism()
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.SASL(mech)), nil
}

func (s Security) mechanism() (sasl.Mechanism, error) {
	if s.User == "" || s.Password == "" {
		return nil, fmt.Errorf("kafka SASL %s needs a user and a password", s.Mechanism)
	}
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka SASL mechanism %q: want one of %s", s.Mechanism, strings.Join(Mechanisms, ", "))
}

// Check connects to the brokers as c says and reports, in words an
// operator can act on, why it cannot: a broker certificate no given
// authority signed, a refused SASL login, no broker reached within
// timeout. A node calls it before anything else, so that a wrong setting
// stops it at start rather than in endless retries.
func Check(ctx context.Context, c Config, timeout time.Duration) error {
	cl, err := kgo.NewClient(c.Seeds()...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = cl.Ping(ctx)
	var unknownCA x509.UnknownAuthorityError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknownCA):
		return fmt.Errorf("kafka brokers %s: their TLS certificate is signed by an authority not trusted (give it with --kafka-tls-ca): %w", strings.Join(c.Brokers, ","), err)
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("kafka brokers %s refused the SASL login (wrong user or password, or a mechanism the user has no credentials for): %w", strings.Join(c.Brokers, ","), err)
	}
	return fmt.Errorf("kafka brokers %s not reached within %v (are they up, and is their listener's security what the --kafka-tls-*/--kafka-sasl-* flags say?): %w", strings.Join(c.Brokers, ","), timeout, err)
}
