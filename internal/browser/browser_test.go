package browser

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestNewCORS(t *testing.T) {
	if c, err := NewCORS(nil); c != nil || err != nil {
		t.Errorf("no origins: %v, %v; want nil, nil", c, err)
	}
	for _, bad := range []string{"example.com", "http://", "https://a.test/", "https://a.test/app"} {
		if _, err := NewCORS([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCORSNet(t *testing.T) {
	c, err := NewCORS([]string{"https://app.test"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Net(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed) // what a route does with OPTIONS
	}))
	do := func(origin, method string) *http.Response {
		r := httptest.NewRequest(method, "/surge.wallet.v1.ChatService/Subscribe", nil)
		r.Header.Set("Origin", origin)
		if method == http.MethodOptions {
			r.Header.Set("Access-Control-Request-Method", "POST")
			r.Header.Set("Access-Control-Request-Headers", "authorization,x-grpc-web")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	pre := do("https://app.test", http.MethodOptions)
	if pre.StatusCode != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.test" ||
		pre.Header.Get("Access-Control-Allow-Headers") != "authorization,x-grpc-web" || pre.Header.Get("Access-Control-Max-Age") == "" {
		t.Errorf("allowed preflight: %d %v", pre.StatusCode, pre.Header)
	}
	if other := do("https://evil.test", http.MethodOptions); other.StatusCode != http.StatusMethodNotAllowed || other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("unlisted origin's preflight: %d %v", other.StatusCode, other.Header)
	}
	if post := do("https://app.test", http.MethodPost); !strings.Contains(post.Header.Get("Access-Control-Expose-Headers"), "grpc-status") {
		t.Errorf("allowed request's response: %v", post.Header)
	}
}

func TestCORSFastAny(t *testing.T) {
	c, err := NewCORS([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Fast(func(ctx *fasthttp.RequestCtx) { ctx.Response.Reset(); ctx.SetBodyString("ok") })
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.Header.Set("Origin", "https://anyone.test")
	h(&ctx)
	if got := string(ctx.Response.Header.Peek("Access-Control-Allow-Origin")); got != "*" {
		t.Errorf("Access-Control-Allow-Origin %q, want *", got)
	}
}

// TestGRPCWebText: a text-mode request, sent as two padded base64 chunks
// as a client may, reaches the binary handler decoded; each write of the
// reply goes out as its own padded chunk under the text content type.
func TestGRPCWebText(t *testing.T) {
	var got []byte
	h := GRPCWebText(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		if ct := r.Header.Get("Content-Type"); ct != "application/grpc-web+proto" {
			t.Errorf("inner content type %q", ct)
		}
		w.Header().Set("Content-Type", "application/grpc-web+proto")
		_, _ = w.Write([]byte{0, 0, 0, 0, 1, 7})
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte{0x80, 0, 0, 0, 0})
	}))
	body := base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0}) + "\r\n" + base64.StdEncoding.EncodeToString([]byte{2, 9, 9})
	r := httptest.NewRequest(http.MethodPost, "/x.Y/Z", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/grpc-web-text")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if string(got) != string([]byte{0, 0, 0, 0, 2, 9, 9}) {
		t.Errorf("decoded body %v", got)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/grpc-web-text+proto" {
		t.Errorf("reply content type %q", ct)
	}
	want := base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0, 1, 7}) + base64.StdEncoding.EncodeToString([]byte{0x80, 0, 0, 0, 0})
	if w.Body.String() != want {
		t.Errorf("reply %q, want %q", w.Body.String(), want)
	}
	bad := httptest.NewRequest(http.MethodPost, "/x.Y/Z", strings.NewReader("AA*A"))
	bad.Header.Set("Content-Type", "application/grpc-web-text")
	h = GRPCWebText(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err == nil {
			t.Error("malformed base64 read without an error")
		}
	}))
	h.ServeHTTP(httptest.NewRecorder(), bad)
}
