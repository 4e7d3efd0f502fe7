package e2e

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
)

// TestAbuseFramingOnNetHTTP: on a keep-alive connection net/http serves,
// a request with Content-Length and Transfer-Encoding is not followed by
// another read from the same bytes: the connection ends after its reply,
// so a request smuggled behind it is never answered (RFC 9112 §6.1).
func TestAbuseFramingOnNetHTTP(t *testing.T) {
	s := start(t, t.TempDir())
	rc := openRaw(t, s)
	rc.send("GET /ui/state HTTP/1.1\r\nHost: surge\r\n\r\n")
	if resp, _, err := rc.reply(); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %v %v", resp, err)
	}
	login := `{"username":"nobody","password":"whatever1"}`
	rc.send("POST /api/public/login HTTP/1.1\r\nHost: surge\r\nContent-Type: application/json\r\n" +
		"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(login)), 16) + "\r\n" + login + "\r\n0\r\n\r\n" +
		"GET /ui/state HTTP/1.1\r\nHost: surge\r\n\r\n")
	resp, body, err := rc.reply()
	if err != nil {
		return // closed without a reply: refused
	}
	t.Logf("the framed request: %s %s", resp.Status, body)
	if resp, body, err := rc.reply(); err == nil {
		t.Fatalf("the request behind Content-Length + Transfer-Encoding was answered: %s %s", resp.Status, body)
	}
}

// TestAbuseTwoAuthorizationHeaders: a request with two Authorization
// headers, the key and something else, is refused (400 invalid_framing)
// rather than taken by its first, on both servers.
func TestAbuseTwoAuthorizationHeaders(t *testing.T) {
	const key = "two-keys"
	s := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", key}, nil)
	s.awaitReady(key)
	openAccounts(t, s.c, "alice")
	transfer := `{"from":"@world","to":"alice","amount":1}`
	for _, tc := range []struct{ name, head string }{
		{"fasthttp", ""},
		{"net/http", "GET /ui/state HTTP/1.1\r\nHost: surge\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := openRaw(t, s)
			if tc.head != "" {
				rc.send(tc.head)
				if resp, _, err := rc.reply(); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("the first request: %v %v", resp, err)
				}
			}
			rc.send("POST /v1/transfers HTTP/1.1\r\nHost: surge\r\nContent-Type: application/json\r\n" +
				"Authorization: Bearer " + key + "\r\nAuthorization: Bearer someone-else\r\n" +
				"Content-Length: " + strconv.Itoa(len(transfer)) + "\r\n\r\n" + transfer)
			resp, body, err := rc.reply()
			if err != nil {
				t.Fatalf("no reply: %v", err)
			}
			if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(`"invalid_framing"`)) {
				t.Fatalf("got %s %s, want 400 invalid_framing", resp.Status, body)
			}
		})
	}
}

// TestAbuseMalformedRequestNotEchoed: fasthttp's answer to a request it
// cannot parse does not quote the request's bytes back.
func TestAbuseMalformedRequestNotEchoed(t *testing.T) {
	s := start(t, t.TempDir())
	rc := openRaw(t, s)
	const marker = "<script>echo-me</script>"
	rc.send("POST /v1/transfers HTTP/1.1\r\nHost: surge\r\nContent-Length: 5\r\nBroken header " + marker + "\r\n\r\nhello")
	resp, body, err := rc.reply()
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	if resp.StatusCode != http.StatusBadRequest || bytes.Contains(body, []byte("echo-me")) {
		t.Fatalf("got %s %q, want 400 without the request's bytes", resp.Status, body)
	}
}
