package e2e

import (
	"context"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// h2cClientFrom speaks HTTP/2 without TLS from the loopback address ip.
func h2cClientFrom(ip string) *http.Client {
	hc := h2cClient()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	hc.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return hc
}

// Wrong passwords from one address are limited there: they do not lock
// the user out of their account from their own address.
func TestWalletFailedLoginsDoNotLockTheOwnerOut(t *testing.T) {
	srv := start(t, t.TempDir(), walletArgs...)
	owner := newWalletClients(t, srv.url)
	m := owner.register(t, "victim")
	attacker := newWalletClientsWith(t, srv.url, h2cClientFrom("127.0.0.2"), connect.WithGRPC())
	limited := false
	for range 12 {
		_, err := attacker.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: m.username, Password: "guess-guess"}))
		if connect.CodeOf(err) == connect.CodeResourceExhausted {
			limited = true
			break
		}
		wantCode(t, "wrong password", err, connect.CodeUnauthenticated)
	}
	if !limited {
		t.Fatalf("12 wrong passwords from one address were never rate-limited")
	}
	if _, err := owner.auth.Login(ctxT(t), connect.NewRequest(&walletv1.LoginRequest{Username: m.username, Password: "password1"})); err != nil {
		t.Fatalf("the owner's login from their own address after another's failures: %v", err)
	}
}
