// Package h2spectest runs h2spec, the HTTP/2 conformance suite, at the
// version go.mod pins (as a tool), for the tests of surge's HTTP/2 server
// and of the binary.
package h2spectest

import (
	"encoding/xml"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Cases is how many cases h2spec v2.2.1 runs.
const Cases = 145

// Build builds h2spec into the test's temporary directory and returns its
// path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "h2spec")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/summerwind/h2spec/cmd/h2spec")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building h2spec: %v\n%s", err, out)
	}
	return bin
}

// Run runs the h2spec at bin against addr, asking for path, over TLS (any
// certificate accepted) if secure, writing its report to report, and
// returns each case's outcome (pass, fail or skip) by its section and
// title.
func Run(bin, addr, path, report string, secure bool) (map[string]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	args := []string{"-h", host, "-p", port, "-P", path, "-o", "3", "-j", report}
	if secure {
		args = append(args, "-t", "-k")
	}
	out, runErr := exec.Command(bin, args...).CombinedOutput()
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, errors.Join(err, runErr, errors.New(string(out)))
	}
	results, err := outcomes(b)
	if err == nil && len(results) == 0 {
		err = errors.New("h2spec reported no cases:\n" + string(out))
	}
	return results, err
}

// outcomes reads h2spec's JUnit report.
func outcomes(report []byte) (map[string]string, error) {
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
	if err := xml.Unmarshal(report, &suites); err != nil {
		return nil, err
	}
	results := map[string]string{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			outcome := "pass"
			switch {
			case c.Failure != nil || c.Error != nil:
				outcome = "fail"
			case c.Skipped != nil:
				outcome = "skip"
			}
			results[c.Section+" "+c.Title] = outcome
		}
	}
	return results, nil
}
