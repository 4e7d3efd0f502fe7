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
	// prefix ending in "/" matches every path that starts with it.
	Prefix   string
	Workload string
}

// DefaultRules are the routes of SPEC §3. A workload that adds routes under
// a new prefix (the wallet's JSON gateway, say) adds a rule here.
var DefaultRules = []Rule{
	{"/v1/accounts", WorkloadLedger},
	{"/v1/transfers", WorkloadLedger},
	{"/v1/ledger", WorkloadLedger},
	{"/v1/event", WorkloadTickets},
	{"/v1/reservation", WorkloadTickets},
	{"/v0", WorkloadKV},
}

// classifier maps a request to a workload index of a Meter.
type classifier struct {
	rules []indexedRule
	// grpc is the index of requests with a gRPC content type: surge's gRPC
	// services are the wallet's. -1 if the Meter has no wallet workload.
	grpc int
}

type indexedRule struct {
	Rule
	index int
}

func newClassifier(rules []Rule, m *Meter) classifier {
	c := classifier{grpc: m.Index(WorkloadWallet)}
	for _, r := range rules {
		if i := m.Index(r.Workload); i >= 0 {
			c.rules = append(c.rules, indexedRule{r, i})
		}
	}
	return c
}

// classify returns r's workload index, or -1 for requests of no workload
// (health checks, /metrics, the dashboard itself).
func (c *classifier) classify(r *http.Request) int {
	p := r.URL.Path
	for i := range c.rules {
		if under(p, c.rules[i].Prefix) {
			return c.rules[i].index
		}
	}
	if c.grpc >= 0 && isGRPC(r) {
		return c.grpc
	}
	return -1
}

// under reports whether path is prefix or below it (see Rule.Prefix).
func under(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || prefix[len(prefix)-1] == '/' || path[len(prefix)] == '/'
}

func isGRPC(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	return len(ct) > 0 && strings.HasPrefix(ct[0], "application/grpc")
}
