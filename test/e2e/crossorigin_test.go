package e2e

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestCORSAllowList: with --cors-origins, the listed origin's preflights
// are answered on every kind of route (ledger JSON, key-value, Connect,
// gRPC-Web) and its requests' replies marked readable; another origin gets
// no CORS header; without the flag nothing changes.
func TestCORSAllowList(t *testing.T) {
	const app = "https://app.example"
	srv := start(t, t.TempDir(), "--cors-origins", app+",https://other.example")
	plain := start(t, t.TempDir())
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	preflight := func(base, origin, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, base+path, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-jwt-token")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	for _, path := range []string{"/v1/transfers", "/v0/entity?id=k", "/surge.wallet.v1.WalletService/GetBalance", "/surge.wallet.v1.ChatService/Subscribe"} {
		res := preflight(srv.url, app, path)
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != app ||
			!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "x-jwt-token") {
			t.Errorf("%s preflight from %s: %d %v", path, app, res.StatusCode, res.Header)
		}
		if res := preflight(srv.url, "https://evil.example", path); res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s preflight from an unlisted origin: %v", path, res.Header)
		}
		if res := preflight(plain.url, app, path); res.Header.Get("Access-Control-Allow-Origin") != "" || res.StatusCode == http.StatusNoContent {
			t.Errorf("%s preflight without --cors-origins: %d %v", path, res.StatusCode, res.Header)
		}
	}
}

// TestGRPCWebTextMode: a text-mode call is served, its failure carried in
// grpc-status like the binary mode's, and a good call's reply is base64 of
// the binary mode's frames.
func TestGRPCWebTextMode(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	w := newWalletClients(t, srv.url)
	m := w.register(t, "text")
	call := func(token string) *http.Response {
		t.Helper()
		empty := base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0, 0})
		req, _ := http.NewRequest(http.MethodPost, srv.url+"/surge.wallet.v1.WalletService/GetBalance", strings.NewReader(empty))
		req.Header.Set("Content-Type", "application/grpc-web-text")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	bad := call("nonsense")
	_ = bad.Body.Close()
	if bad.StatusCode != http.StatusOK || bad.Header.Get("Grpc-Status") != "16" {
		t.Errorf("bad token: %d grpc-status %q, want 200 with 16 (UNAUTHENTICATED)", bad.StatusCode, bad.Header.Get("Grpc-Status"))
	}
	good := call(m.token)
	body, err := io.ReadAll(good.Body)
	_ = good.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ct := good.Header.Get("Content-Type"); ct != "application/grpc-web-text+proto" {
		t.Errorf("content type %q", ct)
	}
	frames := decodeTextFrames(t, string(body))
	if len(frames) != 2 || frames[0].flag != 0 || frames[1].flag != 0x80 || !strings.Contains(string(frames[1].data), "grpc-status: 0") {
		t.Errorf("frames %+v, want a message and trailers with grpc-status 0", frames)
	}
}

type webFrame struct {
	flag byte
	data []byte
}

// decodeTextFrames decodes a text-mode body (padded base64 chunks) into
// gRPC-Web frames.
func decodeTextFrames(t *testing.T, body string) []webFrame {
	t.Helper()
	var raw []byte
	for i := 0; i+4 <= len(body); i += 4 {
		b, err := base64.StdEncoding.DecodeString(body[i : i+4])
		if err != nil {
			t.Fatalf("reply is not base64: %v", err)
		}
		raw = append(raw, b...)
	}
	var out []webFrame
	for len(raw) >= 5 {
		n := int(raw[1])<<24 | int(raw[2])<<16 | int(raw[3])<<8 | int(raw[4])
		if len(raw) < 5+n {
			t.Fatalf("truncated frame")
		}
		out = append(out, webFrame{raw[0], raw[5 : 5+n]})
		raw = raw[5+n:]
	}
	return out
}
