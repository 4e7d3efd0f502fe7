package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusesPublicAddressWithoutKey: listening on a non-loopback address
// without --api-key must refuse to start, with a non-zero exit and a
// message that names the missing key.
func TestRefusesPublicAddressWithoutKey(t *testing.T) {
	out := wantRefusal(t, "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if !strings.Contains(out, "api-key") && !strings.Contains(out, "api key") {
		t.Errorf("refusal should explain that --api-key is needed; output:\n%s", out)
	}
}

// TestRefusesPlaintextOffLoopback: with a key but neither TLS nor
// --plaintext-behind-proxy, a non-loopback address is refused, and the
// message names both ways out.
func TestRefusesPlaintextOffLoopback(t *testing.T) {
	out := wantRefusal(t, "serve", "--addr", "0.0.0.0:0", "--api-key", "K", "--data", t.TempDir())
	for _, want := range []string{"plaintext", "--tls-cert", "--tls-key", "--plaintext-behind-proxy"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal should name %s; output:\n%s", want, out)
		}
	}
}

// wantRefusal runs surge with args, which must exit non-zero without
// listening, and returns its output, lower-cased.
func wantRefusal(t *testing.T, args ...string) string {
	t.Helper()
	return awaitRefusal(t, launch(t, args, nil))
}

// awaitRefusal waits for s to exit non-zero without listening and
// returns its output, lower-cased.
func awaitRefusal(t *testing.T, s *server) string {
	t.Helper()
	select {
	case <-s.exited:
	case u := <-s.listen:
		t.Fatalf("%s started on %s; it must refuse", s.name, u)
	case <-time.After(startTimeout):
		t.Fatalf("%s neither exited nor listened within %v", s.name, startTimeout)
	}
	if s.err == nil {
		t.Errorf("%s: exit status 0; refusing to start must exit non-zero", s.name)
	}
	return strings.ToLower(s.out.String())
}

// TestAPIKey: with an API key (flag or SURGE_API_KEY, loopback or
// wildcard address), /v1 routes need the bearer token and answer 401
// unauthorized without it, changing nothing; /healthz, /readyz and
// /metrics stay open.
func TestAPIKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flag", []string{"--addr", "127.0.0.1:0", "--api-key", "k3y"}, nil},
		{"env", []string{"--addr", "127.0.0.1:0"}, []string{"SURGE_API_KEY=k3y"}},
		{"wildcard_with_key", []string{"--addr", "0.0.0.0:0", "--api-key", "k3y", "--plaintext-behind-proxy"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--data", t.TempDir()}, tc.args...)
			s := launch(t, args, tc.env)
			s.awaitReady("k3y")
			wantKeyRequired(t, s.c, "k3y")
		})
	}
}

// wantKeyRequired checks authentication on a server whose key is key;
// authed is a client that sends it.
func wantKeyRequired(t *testing.T, authed *Client, key string) {
	t.Helper()
	_, r, err := authed.Stats()
	want(t, r, err, http.StatusOK, "")
	for _, c := range []*Client{authed.withKey(""), authed.withKey(key + "x"), authed.withAuth("Basic " + key), authed.withAuth(key)} {
		_, r, err := c.Stats()
		want(t, r, err, http.StatusUnauthorized, "unauthorized")
		_, r, err = c.CreateAccount(NewAccount{ID: "sec-a", Currency: currency})
		want(t, r, err, http.StatusUnauthorized, "unauthorized")
		_, r, err = c.Transfer(TransferReq{ID: "sec-t", From: world, To: "sec-a", Amount: 1})
		want(t, r, err, http.StatusUnauthorized, "unauthorized")
		_, r, err = c.Account(world)
		want(t, r, err, http.StatusUnauthorized, "unauthorized")
	}
	_, r, err = authed.Account("sec-a")
	want(t, r, err, http.StatusNotFound, "account_not_found")
	wantTransferNotFound(t, authed, "sec-t")
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := authed.withKey("").raw(http.MethodGet, path, "", nil)
		want(t, r, err, http.StatusOK, "")
	}
}
