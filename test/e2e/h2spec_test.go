package e2e

import (
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// TestH2SpecConformance runs h2spec, the HTTP/2 conformance suite (pinned
// in go.mod as a tool), against surge, over h2c with prior knowledge and
// over TLS with ALPN: every one of its 145 cases must pass.
//
// surge is asked for an entry of /v0/entity, a native route, whose
// handler reads the whole body before it answers: with a handler that
// answers first, whether a body that breaks its content-length is caught
// depends on which comes first, the answer or the DATA frame, so cases
// would pass or fail by chance. The entry has a value, so the cases that
// need a response body run rather than skip.
func TestH2SpecConformance(t *testing.T) {
	h2spec := buildH2Spec(t)
	t.Run("h2c", func(t *testing.T) {
		h2specAgainst(t, h2spec, start(t, t.TempDir()), false)
	})
	t.Run("tls", func(t *testing.T) {
		pki := newTestPKI(t, "h2spec")
		cert := pki.issue(t, "server", "", "", "127.0.0.1")
		h2specAgainst(t, h2spec, startTLS(t, pki, cert, nil), true)
	})
}

// h2specCases is how many cases h2spec v2.2.1 runs.
const h2specCases = 145

// h2specAgainst runs h2spec against the surge s, over TLS if secure, and
// fails each case that does not pass.
func h2specAgainst(t *testing.T, h2spec string, s *server, secure bool) {
	t.Helper()
	const path = "/v0/entity?id=h2spec"
	if r, err := s.c.raw(http.MethodPut, path, "application/octet-stream", []byte("conformance")); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("PUT %s: %v %v", path, r, err)
	}
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runH2Spec(h2spec, u.Host, path, filepath.Join(t.TempDir(), "surge.xml"), secure)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("h2spec: surge passes %d of %d", count(got, "pass"), len(got))
	if len(got) != h2specCases {
		t.Errorf("h2spec ran %d cases, want %d", len(got), h2specCases)
	}
	for _, c := range sortedKeys(got) {
		if got[c] != "pass" {
			t.Errorf("%s: %s", c, got[c])
		}
	}
}

// buildH2Spec builds the h2spec that go.mod pins.
func buildH2Spec(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "h2spec")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/summerwind/h2spec/cmd/h2spec")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building h2spec: %v\n%s", err, out)
	}
	return bin
}

// runH2Spec runs h2spec against addr, asking for path, over TLS (any
// certificate accepted) if secure, and returns each case's outcome (pass,
// fail or skip) by its section and title.
func runH2Spec(bin, addr, path, report string, secure bool) (map[string]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, err
	}
	args := []string{"-h", host, "-p", port, "-P", path, "-o", "3", "-j", report}
	if secure {
		args = append(args, "-t", "-k")
	}
	cmd := exec.Command(bin, args...)
	out, runErr := cmd.CombinedOutput()
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, errors.Join(err, runErr, errors.New(string(out)))
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
	if len(results) == 0 {
		return nil, errors.New("h2spec reported no cases:\n" + string(out))
	}
	return results, nil
}

func count(results map[string]string, outcome string) int {
	n := 0
	for _, o := range results {
		if o == outcome {
			n++
		}
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
