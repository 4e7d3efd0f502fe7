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
	for _, tc := range []struct {
		addr, key string
		ok        bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.2:0", "", true},
		{"[::1]:8080", "", true},
		{"localhost:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"10.1.2.3:8080", "", false},
		{"0.0.0.0:8080", "k", true},
		{"no-port", "", false},
	} {
		err := checkExposure(tc.addr, tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("checkExposure(%q, %q) = %v, want ok=%v", tc.addr, tc.key, err, tc.ok)
		}
	}
}
