package cli

import (
	"strings"
	"testing"
)

// TestBenchSpikeFlags checks the spike's spelling of the common flags:
// -n and -c as ticket-master's and ghz's clients have them, no warm-up.
func TestBenchSpikeFlags(t *testing.T) {
	cmd := newBenchSpikeCommand()
	if err := cmd.ParseFlags([]string{"-n", "5000", "-c", "64", "--events", "2", "--wait", "10s"}); err != nil {
		t.Fatal(err)
	}
	fs := cmd.Flags()
	for name, want := range map[string]string{"iterations": "5000", "vus": "64", "events": "2", "wait": "10s", "areas": "100"} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %s; want %s", name, got, want)
		}
	}
	if fs.Lookup("warmup") != nil {
		t.Error("spike has a --warmup flag")
	}
	if usage := fs.Lookup("iterations").Usage; !strings.Contains(usage, "reservation requests") {
		t.Errorf("-n usage %q", usage)
	}
}

func TestBenchSpikeRejectsBadConfig(t *testing.T) {
	cmd := newBenchSpikeCommand()
	cmd.SetArgs([]string{"--max-seats", "30", "--cols", "20", "--target", "http://127.0.0.1:1"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--max-seats must be 1 to 50 (and at most --cols)") {
		t.Fatalf("Execute() = %v", err)
	}
}
