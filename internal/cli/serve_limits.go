package cli

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/dashboard"
	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
)

// addLimitFlags adds the front door's limits (docs/OPERATIONS.md, "Limits").
func addLimitFlags(f *pflag.FlagSet, c *serveConfig) {
	d := front.DefaultLimits
	f.IntVar(&c.limits.MaxConns, "max-conns", d.MaxConns, "connections open at once; past it a new connection gets 503 and is closed as it is accepted")
	f.IntVar(&c.bodyMB, "body-budget-mb", int(d.BodyBytes>>20), "MiB of request bodies held at once; a body is read only once its route, key and this budget admit it, else 503 overloaded with Retry-After")
	f.Int64Var(&c.limits.MaxWork, "max-inflight", d.MaxWork, fmt.Sprintf("units of work in progress: a request in a handler is one, plus one per %d bytes of its body (a body weighs at most all of it); past it requests get 503 overloaded with Retry-After at once (on HTTP/2, per stream), and gRPC calls UNAVAILABLE", front.WorkUnitBytes))
	f.Int64Var(&c.limits.MaxRequests, "max-inflight-requests", d.MaxRequests, "requests in progress at once, whatever their bodies; past it requests get 503 overloaded with Retry-After at once (on HTTP/2, per stream, once a new stream has waited, held back from the server, for a place for up to a second without one coming back), and gRPC calls UNAVAILABLE; long-polls, event streams and WebSockets hold no place while they wait (default: 64 for each CPU, 256 in cluster mode; 0: no bound)")
	f.Uint32Var(&c.limits.MaxStreams, "max-streams", d.MaxStreams, "concurrent streams per HTTP/2 or gRPC connection")
	f.DurationVar(&c.headerTO, "header-timeout", 10*time.Second, "longest a request's headers may take to arrive (HTTP/1.1: headers and body), and a new connection its first request")
	f.DurationVar(&c.limits.BodyTimeout, "body-timeout", d.BodyTimeout, "longest a request body may take to arrive over HTTP/2 or gRPC-Web/Connect (HTTP/1.1: --header-timeout covers the body)")
	f.IntVar(&c.limits.MaxConnsPerClient, "max-conns-per-client", 0, "connections one client address may hold open; past it its new connections get 503 and are closed as they are accepted (0: a quarter of --max-conns)")
	f.Int64Var(&c.limits.MaxWorkPerClient, "max-inflight-per-client", 0, "units of work one client may have in progress (see --max-inflight); past it its requests get 503 overloaded with Retry-After (0: half of --max-inflight)")
	f.StringSliceVar(&c.trustedProxies, "trusted-proxies", nil, "addresses or CIDR prefixes of proxies whose X-Forwarded-For names the client for the per-client limits; their own connections are not capped per client")
	f.StringVar(&c.http2Server, "http2-server", string(front.HTTP2Surge), "server of the HTTP/2 connections that are not gRPC's: surge (its own, package front/h2) or net (net/http's)")
	f.Int64Var(&c.limits.MinBodyRate, "min-body-rate", d.MinBodyRate, "slowest a request body may arrive, in bytes a second, once its first 2 s are over; a slower one gets 408 request_timeout and its connection is closed")
}

// checkLimits validates the limits' flags and sets the body budget.
func checkLimits(c *serveConfig) error {
	largest := max(ledgerapi.MaxBatchBody, c.kvValue) + 1
	if c.bodyMB <= 0 || int64(c.bodyMB)<<20 < int64(largest) {
		return fmt.Errorf("--body-budget-mb %d: want at least the largest body a route takes (%d bytes)", c.bodyMB, largest)
	}
	c.limits.BodyBytes = int64(c.bodyMB) << 20
	for _, p := range c.trustedProxies {
		prefix, err := parsePrefix(p)
		if err != nil {
			return fmt.Errorf("--trusted-proxies: %w", err)
		}
		c.limits.TrustedProxies = append(c.limits.TrustedProxies, prefix)
	}
	if c.limits.MaxConnsPerClient < 0 || c.limits.MaxWorkPerClient < 0 || c.limits.MaxRequests < 0 {
		return fmt.Errorf("--max-conns-per-client, --max-inflight-per-client and --max-inflight-requests must not be negative")
	}
	if c.limits.MaxConns <= 0 || c.limits.MaxStreams == 0 || c.limits.MaxWork <= 0 || c.limits.BodyTimeout <= 0 ||
		c.limits.MinBodyRate <= 0 || c.headerTO <= 0 {
		return fmt.Errorf("--max-conns, --max-streams, --max-inflight, --header-timeout, --body-timeout and --min-body-rate must be positive")
	}
	if s := front.HTTP2Server(c.http2Server); s != front.HTTP2Surge && s != front.HTTP2Net {
		return fmt.Errorf("--http2-server %q: want surge or net", c.http2Server)
	}
	if c.limits.MaxRequests == 0 {
		c.limits.MaxRequests = -1 // no bound (front.Limits: zero takes the default)
	}
	return nil
}

// limitUses reads the front door's limits in force and their use, for
// the dashboard's limits panel.
func limitUses(a *front.Admission) func() []dashboard.LimitUse {
	l := a.Limits()
	return func() []dashboard.LimitUse {
		u := a.Use()
		return []dashboard.LimitUse{
			{Name: "max-conns", Limit: int64(l.MaxConns), Used: u.Conns, Unit: "connections"},
			{Name: "body-budget-mb", Limit: l.BodyBytes, Used: u.BodyBytes, Unit: "bytes of bodies"},
			{Name: "max-inflight", Limit: l.MaxWork, Used: u.Work, Unit: "units of work"},
			{Name: "max-inflight-requests", Limit: l.MaxRequests, Used: u.Requests, Unit: "requests"},
			{Name: "max-streams", Limit: int64(l.MaxStreams), Used: -1, Unit: "streams"},
		}
	}
}

// idleTimeout closes a keep-alive connection, or a gRPC connection without
// calls, after this long without a request.
const idleTimeout = 2 * time.Minute

// parsePrefix reads an address (one host) or a CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	return netip.ParsePrefix(s)
}
