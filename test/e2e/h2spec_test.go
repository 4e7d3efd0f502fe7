package e2e

import (
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"testing"

	"github.com/surge-dev/surge/internal/front/h2/h2spectest"
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
	h2spec := h2spectest.Build(t)
	t.Run("h2c", func(t *testing.T) {
		h2specAgainst(t, h2spec, start(t, t.TempDir()), false)
	})
	t.Run("tls", func(t *testing.T) {
		pki := newTestPKI(t, "h2spec")
		cert := pki.issue(t, "server", "", "", "127.0.0.1")
		h2specAgainst(t, h2spec, startTLS(t, pki, cert, nil), true)
	})
}

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
	got, err := h2spectest.Run(h2spec, u.Host, path, filepath.Join(t.TempDir(), "surge.xml"), secure)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("h2spec: surge passes %d of %d", count(got, "pass"), len(got))
	if len(got) != h2spectest.Cases {
		t.Errorf("h2spec ran %d cases, want %d", len(got), h2spectest.Cases)
	}
	for _, c := range sortedKeys(got) {
		if got[c] != "pass" {
			t.Errorf("%s: %s", c, got[c])
		}
	}
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
