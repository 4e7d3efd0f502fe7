package e2e

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGRPCWebStreamAfterAFastHTTPRequest opens chat's Subscribe in
// gRPC-Web text mode, as the browser's client does, on a keep-alive
// connection whose first request fasthttp served (a page, a JSON call):
// the stream's headers, which it sends before any message, must arrive
// while it waits for one.
func TestGRPCWebStreamAfterAFastHTTPRequest(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	token := newWalletClients(t, srv.url).register(t, "stream").token
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A stream whose headers never come fails here; this is no speed check.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET /readyz HTTP/1.1\r\nHost: surge\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	first, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, first.Body)
	_ = first.Body.Close()
	body := base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0, 0}) // an empty SubscribeRequest
	req := fmt.Sprintf("POST /surge.wallet.v1.ChatService/Subscribe HTTP/1.1\r\nHost: surge\r\n"+
		"Content-Type: application/grpc-web-text\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", token, len(body), body)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the stream's headers did not come while it waited: %v", err)
	}
	// The stream does not end: closing its body would read until it does,
	// so the connection is closed instead (deferred above).
	if res.StatusCode != http.StatusOK || res.Header.Get("Grpc-Status") != "" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "application/grpc-web-text") {
		t.Fatalf("the stream opened with %d, %v", res.StatusCode, res.Header)
	}
}
