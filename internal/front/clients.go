package front

import (
	"net"
	"net/netip"
	"strings"
	"sync"
)

// clients bounds what one client may hold of the global budgets, so that
// one address cannot take all of them: connections (Limits.MaxConnsPerClient)
// and work (Limits.MaxWorkPerClient). A client is a source address, or,
// behind a trusted proxy (Limits.TrustedProxies), the address the proxy
// names in X-Forwarded-For; a trusted proxy's own connections are not
// capped, since they carry many clients.
type clients struct {
	maxConns, maxWork int64
	trusted           []netip.Prefix
	mu                sync.Mutex
	held              map[netip.Addr]*clientUse
}

// clientUse is what one client holds.
type clientUse struct{ conns, work int64 }

func newClients(l Limits) *clients {
	return &clients{maxConns: int64(l.MaxConnsPerClient), maxWork: l.MaxWorkPerClient,
		trusted: l.TrustedProxies, held: make(map[netip.Addr]*clientUse)}
}

// take holds conns connections and work units for client a, if its caps
// allow; work past the cap is clamped to it, so that the heaviest request
// is taken when the client holds nothing else. It returns the work held.
func (c *clients) take(a netip.Addr, conns, work int64) (int64, bool) {
	work = min(work, c.maxWork)
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.held[a]
	if u == nil {
		u = &clientUse{}
		c.held[a] = u
	}
	if u.conns+conns > c.maxConns || u.work+work > c.maxWork {
		c.dropIdle(a, u)
		return 0, false
	}
	u.conns += conns
	u.work += work
	return work, true
}

// give returns what take held.
func (c *clients) give(a netip.Addr, conns, work int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.held[a]; u != nil {
		u.conns -= conns
		u.work -= work
		c.dropIdle(a, u)
	}
}

// dropIdle forgets a client that holds nothing; c.mu is held.
func (c *clients) dropIdle(a netip.Addr, u *clientUse) {
	if u.conns == 0 && u.work == 0 {
		delete(c.held, a)
	}
}

// isTrusted reports whether a is a trusted proxy.
func (c *clients) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// of names the client of a request from remote whose X-Forwarded-For
// headers are read by headers: the remote address,
// unless it is a trusted proxy, then the rightmost address in forwarded
// that is not one (each proxy appends the address it got the request
// from, so the addresses to the right of it are vouched for).
func (c *clients) of(remote netip.Addr, headers func() []string) netip.Addr {
	if !c.isTrusted(remote) {
		return remote
	}
	forwarded := headers()
	for i := len(forwarded) - 1; i >= 0; i-- {
		hops := strings.Split(forwarded[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				return remote // a hop that is not an address: trust none further left
			}
			if a = a.Unmap(); !c.isTrusted(a) {
				return a
			}
		}
	}
	return remote
}

// addrOf is the IP address of a net.Addr (the zero Addr if it has none).
func addrOf(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	if a == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
