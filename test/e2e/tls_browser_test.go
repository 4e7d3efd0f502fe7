package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
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
	site := crossOriginSite(t)
	srv := startTLS(t, pki, cert, nil, append(walletArgs, "--cors-origins", site)...)

	b.open(t, srv.url+"/", `[data-panel="front-limits"] tr[data-limit="max-conns"]`)
	waitJS(t, b, "the dashboard's stream counted over TLS", `Number(document.querySelector('[data-panel="front-limits"] tr[data-limit="max-conns"]').dataset.used) >= 1`)
	b.screenshot(t, "tls-dashboard")

	crossOriginChat(t, b, site, srv.url, newWalletClientsWith(t, srv.url, srv.c.hc, connect.WithGRPC()))
}
