package cli

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// TestKafkaSecurityPassword: the SASL password comes from its file, else
// the environment, and a mechanism without one, or a user without a
// mechanism, is refused.
func TestKafkaSecurityPassword(t *testing.T) {
	env := map[string]string{kafkaPasswordEnv: "from-env"}
	files := map[string]string{"/run/pw": "from-file\n"}
	k := kafkaSecurity{
		mechanism: "SCRAM-SHA-512", user: "surge",
		lookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
		readFile: func(name string) ([]byte, error) {
			if v, ok := files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		},
	}
	if s, err := k.security(); err != nil || s.Password != "from-env" {
		t.Errorf("from the environment: %q, %v", s.Password, err)
	}
	withFile := k
	withFile.passwordFile = "/run/pw"
	if s, err := withFile.security(); err != nil || s.Password != "from-file" {
		t.Errorf("from the file: %q, %v", s.Password, err)
	}
	withFile.passwordFile = "/run/missing"
	if _, err := withFile.security(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	delete(env, kafkaPasswordEnv)
	if _, err := k.security(); err == nil || !strings.Contains(err.Error(), kafkaPasswordEnv) {
		t.Errorf("no password anywhere: %v", err)
	}
	if _, err := (kafkaSecurity{user: "surge"}).security(); err == nil {
		t.Error("a user without a mechanism accepted")
	}
}
