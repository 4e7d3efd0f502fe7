package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// TestCrossOriginBrowser: a page served from another origin, listed in
// --cors-origins, reads the ledger over JSON, sends a chat message over
// Connect JSON and streams chat events over gRPC-Web's text mode in
// headless Chromium; a message sent later by another client reaches the
// open stream.
func TestCrossOriginBrowser(t *testing.T) {
	b := newBrowser(t)
	site := crossOriginSite(t)
	srv := start(t, t.TempDir(), append(walletArgs, "--cors-origins", site)...)
	crossOriginChat(t, b, site, srv.url, newWalletClients(t, srv.url))
	b.screenshot(t, "crossorigin-chat")
}

// crossOriginSite serves testdata/crossorigin.html on an origin of its
// own and returns that origin.
func crossOriginSite(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join("testdata", "crossorigin.html"))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(site.Close)
	return site.URL
}

// crossOriginChat opens the page of site in b against the surge at base
// (whose --cors-origins lists site), w a Go client of the same surge: the
// page reads the ledger, sends a chat message over Connect JSON and
// streams over gRPC-Web's text mode, and a message sent later from Go
// reaches its open stream.
func crossOriginChat(t *testing.T, b *browser, site, base string, w *walletClients) {
	t.Helper()
	a, bob := w.register(t, "pagea"), w.register(t, "pageb")
	w.befriend(t, a, bob)
	q := url.Values{"surge": {base}, "a": {a.token}, "b": {bob.token}, "ida": {strconv.FormatUint(a.id, 10)}}
	b.open(t, site+"/?"+q.Encode(), "#title")
	waitJS(t, b, "the page's message on its own stream", `window.got.includes("hello from the page") || window.errors.length > 0`)
	if errs := eval[[]string](t, b, `window.errors`); len(errs) > 0 {
		t.Fatalf("the page failed: %v", errs)
	}
	if _, err := w.chat.SendMessage(ctxT(t), as(bob, &walletv1.SendMessageRequest{ToUserId: a.id, Text: "live from Go"})); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, "a later message on the open stream", `window.got.includes("live from Go")`)

	if got := eval[[]string](t, b, `window.got`); !slices.Equal(got, []string{"hello from the page", "live from Go"}) {
		t.Errorf("streamed %q, want the two messages in order", got)
	}
	if st := eval[float64](t, b, `window.ledgerStatus`); st != 200 {
		t.Errorf("ledger read: %v, want 200", st)
	}
	if id := eval[string](t, b, `window.ledgerID`); id != "@world" {
		t.Errorf("ledger read: account %q, want @world", id)
	}
	if st := eval[float64](t, b, `window.sendStatus`); st != 200 {
		t.Errorf("Connect JSON send: %v, want 200", st)
	}
	if ct := eval[string](t, b, `window.subType`); ct != "application/grpc-web-text+proto" {
		t.Errorf("stream content type %q, want application/grpc-web-text+proto", ct)
	}
}

// waitJS waits until the page's JavaScript condition holds.
func waitJS(t *testing.T, b *browser, what, cond string) {
	t.Helper()
	poll(t, pageWait, what, func() (bool, string) {
		return eval[bool](t, b, cond), eval[string](t, b, `JSON.stringify({got: window.got, errors: window.errors, ledger: window.ledgerStatus, sub: window.subStatus, send: window.sendStatus})`)
	})
}
