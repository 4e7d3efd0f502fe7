package e2e

import (
	"context"
	"crypto/tls"
	"encoding/xml"
	"errors"
	"io"
	"log"
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
// over TLS with ALPN, and against an empty Go server the same way
// (net/http's HTTP/2, which x/net/http2's deprecated h2c package now
// points to), the reference: every case the empty server passes, surge
// must pass too.
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
		s := start(t, t.TempDir())
		h2specAgainst(t, h2spec, s, serveEmptyH2(t, nil), false)
	})
	t.Run("tls", func(t *testing.T) {
		pki := newTestPKI(t, "h2spec")
		cert := pki.issue(t, "server", "", "", "127.0.0.1")
		pair, err := tls.LoadX509KeyPair(cert.certFile, cert.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		s := startTLS(t, pki, cert, nil)
		h2specAgainst(t, h2spec, s, serveEmptyH2(t, &tls.Config{Certificates: []tls.Certificate{pair}}), true)
	})
}

// h2specAgainst runs h2spec against the surge s and the empty server at
// empty, both at once, over TLS if secure, and fails each case the empty
// server passes and surge does not.
func h2specAgainst(t *testing.T, h2spec string, s *server, empty string, secure bool) {
	t.Helper()
	const path = "/v0/entity?id=h2spec"
	if r, err := s.c.raw(http.MethodPut, path, "application/octet-stream", []byte("conformance")); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("PUT %s: %v %v", path, r, err)
	}
	type run struct {
		results map[string]string
		err     error
	}
	runs := make(chan run, 1)
	go func() {
		r, err := runH2Spec(h2spec, empty, "/", filepath.Join(t.TempDir(), "empty.xml"), secure)
		runs <- run{r, err}
	}()
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runH2Spec(h2spec, u.Host, path, filepath.Join(t.TempDir(), "surge.xml"), secure)
	if err != nil {
		t.Fatal(err)
	}
	ref := <-runs
	if ref.err != nil {
		t.Fatal(ref.err)
	}
	t.Logf("h2spec: surge passes %d of %d, the empty Go server %d", count(got, "pass"), len(got), count(ref.results, "pass"))
	for _, c := range sortedKeys(ref.results) {
		if ref.results[c] == "pass" && got[c] != "pass" {
			t.Errorf("%s: surge %s, the empty server passes", c, got[c])
		}
	}
	for _, c := range sortedKeys(got) {
		if got[c] != "pass" && ref.results[c] != "pass" {
			t.Logf("%s: surge %s, the empty server %s", c, got[c], ref.results[c])
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

// serveEmptyH2 serves an empty handler over HTTP/2 with net/http on a
// loopback port until the test ends, over TLS with tc if it is not nil,
// else over h2c; it returns the address.
func serveEmptyH2(t *testing.T, tc *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		Protocols: new(http.Protocols),
		ErrorLog:  log.New(io.Discard, "", 0), // h2spec's broken frames would fill the test's output
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	if tc != nil {
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
		srv.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return ln.Addr().String()
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
