package telemetry

import (
	"net/http"
	"strings"
)

// The workloads surge serves, as the dashboard and the per-workload metrics
// name them.
const (
	WorkloadLedger  = "ledger"
	WorkloadTickets = "tickets"
	WorkloadKV      = "kv"
	WorkloadWallet  = "wallet"
)

// Workloads lists the workloads in the order the dashboard shows them.
var Workloads = []string{WorkloadLedger, WorkloadTickets, WorkloadKV, WorkloadWallet}

// Rule assigns requests to a workload by path.
type Rule struct {
	// Prefix matches the path itself and the paths below it: "/v1/event"
	// matches /v1/event and /v1/event/x/reservation but not /v1/events. A
	// prefix ending in "/" or "." matches every path that starts with it:
	// "/surge.wallet.v1." is every procedure of that RPC package.
	Prefix string
	// Workload names the workload; "" leaves the requests out of every
	// workload, as for a long-lived stream, whose duration is how long a
	// client listened rather than a latency. The first matching rule wins.
	Workload string
}

// DefaultRules are the routes of docs/API.md. A workload that adds routes under
// a new prefix adds a rule here. The wallet's procedures are the same paths
// over gRPC, gRPC-Web and Connect; gRPC health and reflection are not a
// workload.
var DefaultRules = []Rule{
	{"/v1/accounts", WorkloadLedger},
	{"/v1/transfers", WorkloadLedger},
	{"/v1/ledger", WorkloadLedger},
	{"/v1/event", WorkloadTickets},
	{"/v1/reservation", WorkloadTickets},
	{"/v0", WorkloadKV},
	{"/surge.wallet.v1.ChatService/Subscribe", ""},
	{"/surge.wallet.v1.", WorkloadWallet},
}

// classifier maps a request to a workload index of a Meter.
type classifier struct {
	rules []indexedRule
}

type indexedRule struct {
	Rule
	index int
}

func newClassifier(rules []Rule, m *Meter) classifier {
	var c classifier
	for _, r := range rules {
		i := -1
		if r.Workload != "" {
			if i = m.Index(r.Workload); i < 0 {
				continue // a workload this Meter does not count
			}
		}
		c.rules = append(c.rules, indexedRule{r, i})
	}
	return c
}

// classify returns r's workload index, or -1 for requests of no workload
// (health checks, /metrics, the dashboard itself).
func (c *classifier) classify(r *http.Request) int { return c.classifyPath(r.URL.Path) }

// classifyPath returns the workload index of requests for path p.
func (c *classifier) classifyPath(p string) int {
	for i := range c.rules {
		if under(p, c.rules[i].Prefix) {
			return c.rules[i].index
		}
	}
	return -1
}

// under reports whether path is prefix or below it (see Rule.Prefix).
func under(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	if len(path) == len(prefix) {
		return true
	}
	last := prefix[len(prefix)-1]
	return last == '/' || last == '.' || path[len(prefix)] == '/'
}
