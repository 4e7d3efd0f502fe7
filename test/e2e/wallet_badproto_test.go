package e2e

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"testing"
)

// A request body that is not protobuf is the client's fault: gRPC answers
// INVALID_ARGUMENT (3) for a unary and a server-streaming method, as
// Connect does, not INTERNAL (13).
func TestWalletMalformedProtobufIsInvalidArgument(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	hc := h2cClient()
	defer hc.CloseIdleConnections()
	// Field 1 as a length-delimited string that claims more bytes than follow.
	garbage := []byte{0x0a, 0x7f, 'x'}
	for _, method := range []string{"surge.wallet.v1.AuthService/Login", "surge.wallet.v1.ChatService/Subscribe"} {
		frame := append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(len(garbage)))...)
		req, err := http.NewRequest(http.MethodPost, srv.url+"/"+method, bytes.NewReader(append(frame, garbage...)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		code := res.Trailer.Get("Grpc-Status")
		if code == "" {
			code = res.Header.Get("Grpc-Status")
		}
		if code != "3" {
			t.Errorf("%s: grpc-status %q (%s), want 3 INVALID_ARGUMENT", method, code, res.Trailer.Get("Grpc-Message")+res.Header.Get("Grpc-Message"))
		}
	}
}
