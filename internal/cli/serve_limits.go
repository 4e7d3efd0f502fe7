package cli

import (
	"fmt"
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
	f.Uint32Var(&c.limits.MaxStreams, "max-streams", d.MaxStreams, "concurrent streams per HTTP/2 or gRPC connection")
	f.DurationVar(&c.headerTO, "header-timeout", 10*time.Second, "longest a request's headers may take to arrive (HTTP/1.1: headers and body), and a new connection its first request")
	f.DurationVar(&c.limits.BodyTimeout, "body-timeout", d.BodyTimeout, "longest a request body may take to arrive over HTTP/2 or gRPC-Web/Connect (HTTP/1.1: --header-timeout covers the body)")
	f.Int64Var(&c.limits.MinBodyRate, "min-body-rate", d.MinBodyRate, "slowest a request body may arrive, in bytes a second, once its first 2 s are over; a slower one gets 408 request_timeout and its connection is closed")
}

// checkLimits validates the limits' flags and sets the body budget.
func checkLimits(c *serveConfig) error {
	largest := max(ledgerapi.MaxBatchBody, c.kvValue) + 1
	if c.bodyMB <= 0 || int64(c.bodyMB)<<20 < int64(largest) {
		return fmt.Errorf("--body-budget-mb %d: want at least the largest body a route takes (%d bytes)", c.bodyMB, largest)
	}
	c.limits.BodyBytes = int64(c.bodyMB) << 20
	if c.limits.MaxConns <= 0 || c.limits.MaxStreams == 0 || c.limits.MaxWork <= 0 || c.limits.BodyTimeout <= 0 ||
		c.limits.MinBodyRate <= 0 || c.headerTO <= 0 {
		return fmt.Errorf("--max-conns, --max-streams, --max-inflight, --header-timeout, --body-timeout and --min-body-rate must be positive")
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
			{Name: "max-streams", Limit: int64(l.MaxStreams), Used: -1, Unit: "streams"},
		}
	}
}

// idleTimeout closes a keep-alive connection, or a gRPC connection without
// calls, after this long without a request.
const idleTimeout = 2 * time.Minute
