package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"target": "SURGE_TARGET", "api-key": "SURGE_API_KEY", "amount-max": "SURGE_AMOUNT_MAX"} {
		if got := EnvName(EnvPrefix, flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func newTestFlags() (*pflag.FlagSet, *string, *int, *time.Duration, *bool) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	target := fs.String("target", "http://default", "target")
	vus := fs.Int("vus", 100, "vus")
	dur := fs.Duration("duration", time.Minute, "duration")
	noSetup := fs.Bool("no-setup", false, "skip setup")
	return fs, target, vus, dur, noSetup
}

func TestBindEnvFillsUnsetFlags(t *testing.T) {
	fs, target, vus, dur, noSetup := newTestFlags()
	if err := fs.Parse([]string{"--vus", "7"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SURGE_TARGET":   "http://env:1",
		"SURGE_VUS":      "999", // the command line says 7: it wins
		"SURGE_DURATION": "15s",
		"SURGE_NO_SETUP": "true",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := BindEnv(fs, EnvPrefix, lookup); err != nil {
		t.Fatal(err)
	}
	if *target != "http://env:1" || *vus != 7 || *dur != 15*time.Second || !*noSetup {
		t.Errorf("got target %q vus %d duration %v no-setup %v; want http://env:1, 7, 15s, true", *target, *vus, *dur, *noSetup)
	}
}

func TestBindEnvLeavesDefaultsWithoutEnv(t *testing.T) {
	fs, target, vus, _, _ := newTestFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := BindEnv(fs, EnvPrefix, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	if *target != "http://default" || *vus != 100 {
		t.Errorf("defaults changed: target %q vus %d", *target, *vus)
	}
}

func TestBindEnvRejectsBadValueNamingTheVariable(t *testing.T) {
	fs, _, _, _, _ := newTestFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	err := BindEnv(fs, EnvPrefix, func(k string) (string, bool) { return "lots", k == "SURGE_VUS" })
	if err == nil || !strings.Contains(err.Error(), "SURGE_VUS") {
		t.Errorf("err = %v, want one naming SURGE_VUS", err)
	}
}

func TestDocumentEnv(t *testing.T) {
	fs, _, _, _, _ := newTestFlags()
	DocumentEnv(fs, EnvPrefix)
	DocumentEnv(fs, EnvPrefix) // idempotent
	if u := fs.Lookup("no-setup").Usage; u != "skip setup (env SURGE_NO_SETUP)" {
		t.Errorf("usage = %q", u)
	}
}
