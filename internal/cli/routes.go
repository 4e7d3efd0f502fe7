package cli

import (
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"github.com/surge-dev/surge/internal/dashboard"
	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv/kvapi"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/wallet/rpc"
)

// transports are the handlers of every workload and of the operators'
// pages, which the route table mounts.
type transports struct {
	ledger    *ledgerapi.API
	tickets   *ticketapi.API
	kv        *kvapi.Handler
	wallet    *rpc.Service
	dashboard *dashboard.Dashboard
	apiKey    string
}

// routes is surge's route table: every route of every protocol. front
// sends each connection to one of three servers by its first request (see
// package front):
//
//   - fasthttp, for HTTP/1.1, serves the native routes (the first result)
//     and hands every other path to the net/http table;
//   - grpc-go serves the connections that open with a gRPC call
//     (rpc.Service.GRPCServer, which serve mounts);
//   - net/http serves HTTP/2 and the streams: the table (the second
//     result), which also answers the native routes (front.NetHandler).
//
// The table's rows are tried in order; the first whose test the path
// passes serves it.
func routes(t transports) ([]front.Route, http.Handler) {
	native := slices.Concat(
		t.ledger.FastRoutes(),  // POST /v1/transfers, GET /v1/accounts/{id}, ...
		t.kv.FastRoutes(),      // /v0/entity
		t.tickets.FastRoutes(), // POST /v1/event/{id}/reservation, GET /v1/reservation/{id}
	)
	v1 := http.NewServeMux() // ticketing's /v1 routes beside the ledger's
	for _, p := range ticketapi.Routes {
		v1.Handle(p, t.tickets)
	}
	v1.Handle("/", t.ledger.Handler()) // /v1/..., /metrics, /healthz, /readyz
	dash := telemetry.OperatorOnly(t.dashboard.Handler(), t.apiKey)
	return native, table{
		{exactly("/"), dash},
		{under("/ui/"), dash},
		{under("/debug/pprof/"), telemetry.OperatorOnly(profiles(), t.apiKey)},
		{rpc.Owns, t.wallet.Handler()}, // gRPC-Web, Connect, gRPC on net/http
		{kvapi.Owns, t.kv},             // /v0 but /v0/entity on fasthttp
		{anyPath, v1},
	}
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
// and cost CPU, so routes serves them to operators only (loopback clients
// or those presenting the API key).
func profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
