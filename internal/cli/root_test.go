package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func newFlags() (*pflag.FlagSet, *string, *int) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addr := fs.String("api-key", "", "")
	shards := fs.Int("shards", 0, "")
	return fs, addr, shards
}

func TestBindEnvFillsUnsetFlags(t *testing.T) {
	t.Setenv("SURGE_API_KEY", "from-env")
	t.Setenv("SURGE_SHARDS", "7")
	fs, key, shards := newFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := bindEnv(fs); err != nil {
		t.Fatal(err)
	}
	if *key != "from-env" || *shards != 7 {
		t.Fatalf("got api-key %q shards %d, want from-env and 7", *key, *shards)
	}
}

func TestBindEnvCommandLineWins(t *testing.T) {
	t.Setenv("SURGE_SHARDS", "7")
	fs, _, shards := newFlags()
	if err := fs.Parse([]string{"--shards", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := bindEnv(fs); err != nil {
		t.Fatal(err)
	}
	if *shards != 3 {
		t.Fatalf("shards = %d, want the command line's 3", *shards)
	}
}

func TestBindEnvRejectsBadValue(t *testing.T) {
	t.Setenv("SURGE_SHARDS", "many")
	fs, _, _ := newFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	err := bindEnv(fs)
	if err == nil || !strings.Contains(err.Error(), "SURGE_SHARDS") {
		t.Fatalf("err = %v, want one naming SURGE_SHARDS", err)
	}
}

func TestCheckExposure(t *testing.T) {
	served := tlsConfig{cert: "c.pem", key: "k.pem"}
	proxied := tlsConfig{plaintextBehindProxy: true}
	for _, tc := range []struct {
		addr, key string
		tls       tlsConfig
		ok        bool
	}{
		{"127.0.0.1:8080", "", tlsConfig{}, true},
		{"127.0.0.2:0", "", tlsConfig{}, true},
		{"[::1]:8080", "", tlsConfig{}, true},
		{"localhost:8080", "", tlsConfig{}, true},
		{"127.0.0.1:8080", "", served, true},
		{"0.0.0.0:8080", "", tlsConfig{}, false},
		{":8080", "", tlsConfig{}, false},
		{"10.1.2.3:8080", "", tlsConfig{}, false},
		{"0.0.0.0:8080", "", served, false},
		{"0.0.0.0:8080", "k", tlsConfig{}, false},
		{"0.0.0.0:8080", "k", served, true},
		{"0.0.0.0:8080", "k", proxied, true},
		{"no-port", "", tlsConfig{}, false},
	} {
		err := checkExposure(tc.addr, tc.key, tc.tls)
		if (err == nil) != tc.ok {
			t.Errorf("checkExposure(%q, %q, %+v) = %v, want ok=%v", tc.addr, tc.key, tc.tls, err, tc.ok)
		}
	}
}

// TestCheckExposureNamesBothChoices: the refusal of plaintext off loopback
// tells the operator both ways out.
func TestCheckExposureNamesBothChoices(t *testing.T) {
	err := checkExposure("0.0.0.0:8443", "K", tlsConfig{})
	if err == nil {
		t.Fatal("plaintext off loopback accepted")
	}
	for _, want := range []string{"--tls-cert", "--tls-key", "--plaintext-behind-proxy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
}

func TestTLSFlagsGoTogether(t *testing.T) {
	for _, bad := range []tlsConfig{
		{cert: "c.pem"},
		{key: "k.pem"},
		{clientCA: "ca.pem"},
		{cert: "c.pem", key: "k.pem", plaintextBehindProxy: true},
	} {
		if bad.check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (tlsConfig{cert: "c.pem", key: "k.pem", clientCA: "ca.pem"}).check(); err != nil {
		t.Errorf("mutual TLS refused: %v", err)
	}
}
