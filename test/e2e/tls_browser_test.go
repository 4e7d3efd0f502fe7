package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestTLSBrowser: headless Chromium, trusting the test's server
// certificate, loads the dashboard over https (its limits panel counts
// the page's own event stream), and a page of another origin reads the
// ledger, sends over Connect JSON and streams over gRPC-Web from surge
// serving TLS.
func TestTLSBrowser(t *testing.T) {
	skipIfShort(t)
	pki := newTestPKI(t, "surge-test")
	cert := pki.issue(t, "server", "", "", "127.0.0.1")
	spki := sha256.Sum256(cert.leaf.RawSubjectPublicKeyInfo)
	b := newBrowser(t, chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])))
	page, err := os.ReadFile(filepath.Join("testdata", "crossorigin.html"))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer site.Close()
	srv := startTLS(t, pki, cert, nil, append(walletArgs, "--cors-origins", site.URL)...)

	b.open(t, srv.url+"/", `[data-panel="front-limits"] tr[data-limit="max-conns"]`)
	waitJS(t, b, "the dashboard's stream counted over TLS", `Number(document.querySelector('[data-panel="front-limits"] tr[data-limit="max-conns"]').dataset.used) >= 1`)
	b.screenshot(t, "tls-dashboard")

	w := newWalletClientsWith(t, srv.url, srv.c.hc, connect.WithGRPC())
	a, bob := w.register(t, "tlspagea"), w.register(t, "tlspageb")
	w.befriend(t, a, bob)
	q := url.Values{"surge": {srv.url}, "a": {a.token}, "b": {bob.token}, "ida": {strconv.FormatUint(a.id, 10)}}
	b.open(t, site.URL+"/?"+q.Encode(), "#title")
	waitJS(t, b, "the page's message on its own stream", `window.got.includes("hello from the page") || window.errors.length > 0`)
	if errs := eval[[]string](t, b, `window.errors`); len(errs) > 0 {
		t.Fatalf("the page failed over TLS: %v", errs)
	}
	if _, err := w.chat.SendMessage(ctxT(t), as(bob, &walletv1.SendMessageRequest{ToUserId: a.id, Text: "live from Go"})); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, "a later message on the open stream", `window.got.includes("live from Go")`)
	if got := eval[[]string](t, b, `window.got`); !slices.Equal(got, []string{"hello from the page", "live from Go"}) {
		t.Errorf("streamed %q over TLS, want the two messages in order", got)
	}
	if ct := eval[string](t, b, `window.subType`); ct != "application/grpc-web-text+proto" {
		t.Errorf("stream content type %q, want application/grpc-web-text+proto", ct)
	}
}
