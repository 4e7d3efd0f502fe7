package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// kafkaPasswordEnv carries the SASL password when no file does: a flag
// would show it in ps.
const kafkaPasswordEnv = "SURGE_KAFKA_SASL_PASSWORD"

// kafkaCheckTimeout bounds the check, at start, that the brokers take the
// node's TLS and SASL settings.
const kafkaCheckTimeout = 20 * time.Second

// kafkaSecurity holds the flags of a secured Kafka (docs/CLUSTER.md,
// "Kafka with security on").
type kafkaSecurity struct {
	tls             bool
	ca, cert, key   string
	mechanism, user string
	passwordFile    string
	lookupEnv       func(string) (string, bool)
	readFile        func(string) ([]byte, error)
}

func addKafkaSecurityFlags(f *pflag.FlagSet, k *kafkaSecurity) {
	f.BoolVar(&k.tls, "kafka-tls", false, "with --kafka: reach the brokers over TLS, trusting the system's authorities unless --kafka-tls-ca is given (implied by the other --kafka-tls-* flags)")
	f.StringVar(&k.ca, "kafka-tls-ca", "", "with --kafka: PEM authorities that sign the brokers' certificates")
	f.StringVar(&k.cert, "kafka-tls-cert", "", "with --kafka: PEM client certificate to show brokers that require one (with --kafka-tls-key)")
	f.StringVar(&k.key, "kafka-tls-key", "", "with --kafka: PEM private key of --kafka-tls-cert")
	f.StringVar(&k.mechanism, "kafka-sasl-mechanism", "", "with --kafka: SASL mechanism, "+strings.Join(kafkalog.Mechanisms, ", ")+"; empty: no SASL")
	f.StringVar(&k.user, "kafka-sasl-user", "", "with --kafka-sasl-mechanism: the SASL user")
	f.StringVar(&k.passwordFile, "kafka-sasl-password-file", "", "with --kafka-sasl-mechanism: file holding the SASL password (one line); else the "+kafkaPasswordEnv+" variable. Never a flag, which ps would show")
}

// security resolves the flags, reading the password from its file or the
// environment.
func (k kafkaSecurity) security() (kafkalog.Security, error) {
	s := kafkalog.Security{TLS: k.tls, CAFile: k.ca, CertFile: k.cert, KeyFile: k.key, Mechanism: k.mechanism, User: k.user}
	if k.mechanism == "" {
		if k.user != "" || k.passwordFile != "" {
			return s, fmt.Errorf("--kafka-sasl-user and --kafka-sasl-password-file need --kafka-sasl-mechanism (%s)", strings.Join(kafkalog.Mechanisms, ", "))
		}
		return s, nil
	}
	lookup, read := k.lookupEnv, k.readFile
	if lookup == nil {
		lookup, read = os.LookupEnv, os.ReadFile
	}
	if k.passwordFile != "" {
		b, err := read(k.passwordFile)
		if err != nil {
			return s, fmt.Errorf("--kafka-sasl-password-file: %w", err)
		}
		s.Password = strings.TrimRight(string(b), "\r\n")
	} else if pw, ok := lookup(kafkaPasswordEnv); ok {
		s.Password = pw
	}
	if s.Password == "" {
		return s, fmt.Errorf("--kafka-sasl-mechanism %s needs a password: --kafka-sasl-password-file or %s", k.mechanism, kafkaPasswordEnv)
	}
	return s, nil
}

// secure sets kc's TLS and SASL from the flags and, when either is on,
// checks that the brokers take them, so that a wrong CA or password stops
// the node at start with a message that says which.
func (k kafkaSecurity) secure(ctx context.Context, kc *kafkalog.Config) error {
	s, err := k.security()
	if err != nil {
		return err
	}
	if kc.Dial, err = s.Options(); err != nil || len(kc.Dial) == 0 {
		return err
	}
	return kafkalog.Check(ctx, *kc, kafkaCheckTimeout)
}
