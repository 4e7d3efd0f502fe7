package h2

import (
	"encoding/xml"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestH2Spec runs h2spec, the HTTP/2 conformance suite at the version
// go.mod pins, against a Server of a handler that reads the request's body
// and answers with one: every case must pass.
func TestH2Spec(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "h2spec")
	build := exec.Command("go", "build", "-o", bin, "github.com/summerwind/h2spec/cmd/h2spec")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building h2spec: %v\n%s", err, out)
	}
	addr := serveTest(t, http.HandlerFunc(readThenAnswer))
	host, port, _ := net.SplitHostPort(addr)
	report := filepath.Join(t.TempDir(), "report.xml")
	out, runErr := exec.Command(bin, "-h", host, "-p", port, "-o", "3", "-j", report).CombinedOutput()
	cases, err := readReport(report)
	if err != nil {
		t.Fatalf("h2spec: %v %v\n%s", err, runErr, out)
	}
	failed := 0
	for name, passed := range cases {
		if !passed {
			failed++
			t.Errorf("h2spec case fails: %s", name)
		}
	}
	t.Logf("h2spec: %d of %d cases pass", len(cases)-failed, len(cases))
	if len(cases) != 145 {
		t.Errorf("h2spec ran %d cases, want 145\n%s", len(cases), out)
	}
}

// readThenAnswer reads the whole body, then answers with a short one.
func readThenAnswer(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "conformance")
}

// serveTest serves h with a Server on a loopback port until the test
// ends, and returns the address.
func serveTest(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.ServeConn(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); _ = s.Shutdown(t.Context()) })
	return ln.Addr().String()
}

// readReport reads h2spec's JUnit report: whether each case passed, by
// its section and title.
func readReport(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites struct {
		Suites []struct {
			Cases []struct {
				Section string    `xml:"package,attr"`
				Title   string    `xml:"classname,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil {
		return nil, err
	}
	cases := map[string]bool{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			cases[strings.TrimSpace(c.Section+" "+c.Title)] = c.Failure == nil && c.Error == nil && c.Skipped == nil
		}
	}
	return cases, nil
}
