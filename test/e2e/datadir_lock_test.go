package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestSecondServerNamesTheHolder starts a second server on a data
// directory that a running one holds: it must refuse, saying which process
// holds the directory, and the first must go on serving.
func TestSecondServerNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	first := start(t, dir)
	second := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, nil)
	second.wait()
	if second.err == nil {
		t.Fatal("a second server on a held data directory should exit with an error")
	}
	out := second.out.String()
	want := fmt.Sprintf("pid %d", first.cmd.Process.Pid)
	if !strings.Contains(out, want) || !strings.Contains(out, "holds the data directory") {
		t.Fatalf("the refusal should name the holder (%q); output:\n%s", want, out)
	}
	mustCreateAccount(t, first.c, NewAccount{ID: "still-serving", Currency: "USD"})
}
