package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestTargetFlagRepeatsAndSplits(t *testing.T) {
	target := "http://127.0.0.1:8080"
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	addTargetFlag(fs, &target, "")
	if err := fs.Parse([]string{"--target", "http://a:1", "--target", "http://b:2,http://c:3"}); err != nil {
		t.Fatal(err)
	}
	if want := "http://a:1,http://b:2,http://c:3"; target != want {
		t.Errorf("--target twice: %q, want %q (the default replaced)", target, want)
	}
	if err := fs.Parse([]string{"--target", " , "}); err == nil {
		t.Error("a --target without a URL was accepted")
	}
}

func TestBenchHelpNamesEveryOutput(t *testing.T) {
	long := newBenchCommand().Long
	for _, want := range []string{"JSON", "Markdown", "HTML"} {
		if !strings.Contains(long, want) {
			t.Errorf("surge bench --help does not mention %s output:\n%s", want, long)
		}
	}
}
