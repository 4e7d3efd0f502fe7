package front

import (
	"net/netip"
	"testing"
)

// TestClientOfForwarded: behind a trusted proxy the client is the
// rightmost X-Forwarded-For address that is not a trusted proxy; from
// anywhere else, the source address, whatever the header says.
func TestClientOfForwarded(t *testing.T) {
	c := newClients(Limits{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	proxy, direct := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("192.0.2.7")
	for _, tc := range []struct {
		remote    netip.Addr
		forwarded []string
		want      string
	}{
		{direct, []string{"203.0.113.9"}, "192.0.2.7"},
		{proxy, nil, "10.1.2.3"},
		{proxy, []string{"203.0.113.9"}, "203.0.113.9"},
		{proxy, []string{"198.51.100.1, 203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
		{proxy, []string{"198.51.100.1", "203.0.113.9"}, "203.0.113.9"},
		{proxy, []string{"spoofed, 10.9.9.9"}, "10.1.2.3"},
		{proxy, []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
	} {
		if got := c.of(tc.remote, func() []string { return tc.forwarded }); got.String() != tc.want {
			t.Errorf("of(%s, %q) = %s, want %s", tc.remote, tc.forwarded, got, tc.want)
		}
	}
}

// TestClientShares: a client is held to its share and forgotten once it
// holds nothing; work past the share is clamped to it.
func TestClientShares(t *testing.T) {
	c := newClients(Limits{MaxConnsPerClient: 2, MaxWorkPerClient: 10})
	a := netip.MustParseAddr("192.0.2.1")
	for range 2 {
		if _, ok := c.take(a, 1, 0); !ok {
			t.Fatal("a connection under the share refused")
		}
	}
	if _, ok := c.take(a, 1, 0); ok {
		t.Fatal("a connection past the share taken")
	}
	if w, ok := c.take(a, 0, 50); !ok || w != 10 {
		t.Fatalf("heavy work: %d %v, want clamped to 10", w, ok)
	}
	if _, ok := c.take(a, 0, 1); ok {
		t.Fatal("work past the share taken")
	}
	c.give(a, 2, 10)
	if len(c.held) != 0 {
		t.Fatalf("a client holding nothing is remembered: %v", c.held)
	}
}
