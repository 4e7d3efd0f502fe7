// Package routes is surge's route table: every route of every protocol,
// the same in one process and on a node of a cluster, and the front door
// (package front) that serves it. Each workload's transport owns its
// routes; this package only says which transport answers which path.
package routes

import (
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"github.com/surge-dev/surge/internal/browser"
	"github.com/surge-dev/surge/internal/dashboard"
	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv/kvapi"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/wallet/rpc"
	"github.com/surge-dev/surge/internal/wallet/vmr"
)

// Transports are the handlers of every workload and of the operators'
// pages, which the table mounts.
type Transports struct {
	Ledger  *ledgerapi.API
	Tickets *ticketapi.API
	KV      *kvapi.Handler
	Wallet  *rpc.Service
	VMR     *vmr.Face
	// Dashboard is the live dashboard at /; nil: none (a cluster node).
	Dashboard *dashboard.Dashboard
	// APIKey lets clients off loopback see the operators' pages.
	APIKey string
}

// Table is surge's route table. front sends each connection to one of
// three servers by its first request (see package front):
//
//   - fasthttp, for HTTP/1.1, serves the native routes (the first result)
//     and hands every other path to the net/http table;
//   - grpc-go serves the connections that open with a gRPC call
//     (rpc.Service.GRPCServer, which the caller mounts);
//   - net/http serves HTTP/2 and the streams: the table (the second
//     result), which also answers the native routes (front.NetHandler).
//
// The table's rows are tried in order; the first whose test the path
// passes serves it.
func Table(t Transports) ([]front.Route, http.Handler) {
	native := slices.Concat(
		t.Ledger.FastRoutes(),  // POST /v1/transfers, GET /v1/accounts/{id}, ...
		t.KV.FastRoutes(),      // /v0/entity
		t.Tickets.FastRoutes(), // POST /v1/event/{id}/reservation, GET /v1/reservation/{id}
	)
	v1 := http.NewServeMux() // ticketing's /v1 routes beside the ledger's
	for _, p := range ticketapi.Routes {
		v1.Handle(p, t.Tickets)
	}
	v1.Handle("/", t.Ledger.Handler()) // /v1/..., /metrics, /healthz, /readyz
	var rows table
	if t.Dashboard != nil {
		dash := telemetry.OperatorOnly(t.Dashboard.Handler(), t.APIKey)
		rows = table{{exactly("/"), dash}, {under("/ui/"), dash}}
	}
	return native, append(rows, table{
		{under("/debug/pprof/"), telemetry.OperatorOnly(profiles(), t.APIKey)},
		{rpc.Owns, browser.GRPCWebText(t.Wallet.Handler())}, // gRPC-Web (binary and text), Connect, gRPC on net/http
		{vmr.Owns, t.VMR.Handler()},                         // VMR chat: /api/..., /ws, /vmr.*
		{kvapi.Owns, t.KV},                                  // /v0 but /v0/entity on fasthttp
		{anyPath, v1},
	}...)
}

// SlowPrefixes are the paths whose connections net/http serves from the
// first request on (see package front): the dashboard and its event
// stream (with a dashboard), the wallet's RPCs over every protocol and the
// VMR face's, gRPC health and reflection, profiles, and key-value ranges,
// which stream.
func SlowPrefixes(t Transports) []string {
	p := []string{"/surge.wallet.v1.", "/grpc.", "/debug/", "/v0/entities"}
	if t.Dashboard != nil {
		p = append(p, "/", "/ui/")
	}
	return slices.Concat(p, vmr.SlowPrefixes)
}

// Front returns the front door serving t's routes: o, the mode's options
// (listening limits, gRPC server, middleware), with the routes, the slow
// prefixes, the API key's check and the largest body a handler takes
// filled in.
func Front(t Transports, o front.Options) *front.Server {
	o.Routes, o.Net = Table(t)
	o.SlowPrefixes = SlowPrefixes(t)
	o.Authorize = t.Ledger.AuthorizedHeader
	// The ledger's batch body is the largest a handler takes, unless the
	// key-value limit is larger; handlers check their own limits.
	o.MaxRequestBodyBytes = max(ledgerapi.MaxBatchBody, t.KV.MaxValueBytes()) + 1
	return front.New(o)
}

// table routes a request to the first row whose test its path passes.
type table []struct {
	owns    func(path string) bool
	handler http.Handler
}

func (t table) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, row := range t {
		if row.owns(r.URL.Path) {
			row.handler.ServeHTTP(w, r)
			return
		}
	}
	http.NotFound(w, r)
}

func exactly(p string) func(string) bool { return func(path string) bool { return path == p } }

func under(prefix string) func(string) bool {
	return func(path string) bool { return strings.HasPrefix(path, prefix) }
}

func anyPath(string) bool { return true }

// profiles serves Go's profiles under /debug/pprof/. They reveal internals
// and cost CPU, so the table serves them to operators only (loopback
// clients or those presenting the API key).
func profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
