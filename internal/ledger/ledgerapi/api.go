// Package ledgerapi is the HTTP transport of surge's ledger (docs/API.md):
// the /v1 account and transfer routes, plus /healthz, /readyz and /metrics.
//
// It decodes and validates requests strictly, answers every /v1 error with an
// RFC 9457 problem carrying a stable code, and hands only well-formed requests
// to a Ledger.
package ledgerapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/surge-dev/surge/internal/telemetry"
)

// Options configure an API.
type Options struct {
	// APIKey, when not empty, is required as "Authorization: Bearer <key>"
	// on every /v1 route.
	APIKey string
	// Registry receives the transport's metrics and is served on /metrics.
	// Nil means a private registry.
	Registry *prometheus.Registry
	// Logger receives server faults. Nil means slog.Default().
	Logger *slog.Logger
}

// API serves the ledger over HTTP. It is safe for concurrent use.
type API struct {
	ledger  Ledger
	log     *slog.Logger
	keyHash [sha256.Size]byte
	authOn  bool
	ready   atomic.Bool
	unready atomic.Pointer[string] // why /readyz answers 503, if said
	metrics *metrics
	// allowed maps the path pattern of each /v1 route to its Allow header,
	// for 405 replies; paths answers which path pattern a request has.
	allowed map[string][]string
	paths   *http.ServeMux
	mux     *http.ServeMux
	// unmatched holds the metrics of requests no route matched, by method.
	unmatched map[string]*routeMetrics
}

// New returns an API serving l.
func New(l Ledger, opts Options) *API {
	a := &API{ledger: l, log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	if opts.APIKey != "" {
		a.authOn = true
		a.keyHash = sha256.Sum256([]byte(opts.APIKey))
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	a.metrics = newMetrics(reg)
	a.routes(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return a
}

// Handler returns the handler of all the API's routes. Requests for other
// paths get a plain 404, or a not_found problem under /v1, so the handler can
// serve as the fallback of a server that mounts other routes beside it.
func (a *API) Handler() http.Handler { return a }

// SetReady sets what /readyz answers: 200 once storage is open and recovery
// is done, 503 before that and during shutdown.
func (a *API) SetReady(ready bool) {
	a.unready.Store(nil)
	a.ready.Store(ready)
}

// Ready reports whether /readyz answers 200.
func (a *API) Ready() bool { return a.ready.Load() }

// SetUnready makes /readyz answer 503 saying why (a storage fault).
func (a *API) SetUnready(reason string) {
	a.unready.Store(&reason)
	a.ready.Store(false)
}

// ServeHTTP routes a request. /v1 paths that are not in canonical form get a
// not_found problem here, because ServeMux would redirect them to a cleaned
// path, which for a POST loses the body.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; isV1(p) && !isClean(r.URL.EscapedPath()) {
		a.unmatchedHandler(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

func isV1(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }

// isClean reports whether p has no empty, "." or ".." segment, that is,
// whether ServeMux would route it without a redirect.
func isClean(p string) bool {
	return !strings.Contains(p, "//") && !strings.Contains(p, "/./") && !strings.Contains(p, "/../") &&
		!strings.HasSuffix(p, "/.") && !strings.HasSuffix(p, "/..")
}

// handlerFunc serves one route and returns the status it wrote, so that the
// metrics need no wrapper around the ResponseWriter.
type handlerFunc func(a *API, w http.ResponseWriter, r *http.Request) int

// route is one entry of the routing table: served by serve, or natively
// on fasthttp by native (see FastRoutes).
type route struct {
	method, path string
	serve        handlerFunc
	native       nativeHandler
}

// ledgerRoutes are the /v1 routes of docs/API.md.
var ledgerRoutes = []route{
	{"POST", "/v1/accounts", (*API).createAccount, nil},
	{"GET", "/v1/accounts/{id}", nil, (*API).getAccount},
	{"GET", "/v1/accounts/{id}/transfers", (*API).history, nil},
	{"POST", "/v1/transfers", nil, (*API).createTransfer},
	{"POST", "/v1/transfers/batch", nil, (*API).createBatch},
	{"GET", "/v1/transfers/{id}", (*API).getTransfer, nil},
	{"POST", "/v1/transfers/{id}/post", (*API).postPending, nil},
	{"POST", "/v1/transfers/{id}/void", (*API).voidPending, nil},
	{"GET", "/v1/ledger/stats", (*API).stats, nil},
}

// routes builds the muxes.
func (a *API) routes(metricsHandler http.Handler) {
	a.mux = http.NewServeMux()
	a.paths = http.NewServeMux()
	a.allowed = make(map[string][]string)
	for _, rt := range ledgerRoutes {
		if rt.native != nil {
			rt.serve = a.viaNet(rt.native)
		}
		a.mux.Handle(rt.method+" "+rt.path, a.v1(rt))
		if _, ok := a.allowed[rt.path]; !ok {
			a.paths.Handle(rt.path, http.NotFoundHandler()) // only its pattern is used
		}
		a.allowed[rt.path] = append(a.allowed[rt.path], allowOf(rt.method))
	}
	for p, methods := range a.allowed {
		a.allowed[p] = []string{strings.Join(methods, ", ")}
	}
	a.mux.HandleFunc("/v1/", a.unmatchedHandler)
	a.mux.HandleFunc("/v1", a.unmatchedHandler)
	a.mux.Handle("GET /healthz", a.open("/healthz", health))
	a.mux.Handle("GET /readyz", a.open("/readyz", (*API).readyz))
	a.mux.Handle("GET /metrics", a.open("/metrics", func(_ *API, w http.ResponseWriter, r *http.Request) int {
		sw := statusWriter{ResponseWriter: w, status: http.StatusOK}
		metricsHandler.ServeHTTP(&sw, r)
		return sw.status
	}))
	a.unmatched = make(map[string]*routeMetrics)
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"} {
		a.unmatched[m] = a.metrics.forRoute("unmatched", m)
	}
}

// allowOf lists the methods a route pattern's method admits: GET implies HEAD.
func allowOf(method string) string {
	if method == "GET" {
		return "GET, HEAD"
	}
	return method
}

// v1 wraps a /v1 route with authentication, panic recovery and metrics.
func (a *API) v1(rt route) http.Handler {
	rm := a.metrics.forRoute(rt.path, rt.method)
	serve := rt.serve
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := http.StatusInternalServerError
		defer func() { rm.done(status, start) }()
		defer a.recoverPanic(w, r)
		if !a.authorized(r) {
			status = writeProblem(w, newProblem(codeUnauthorized, "this route needs Authorization: Bearer <api key>"))
			return
		}
		status = serve(a, w, r)
	})
}

// open wraps a route that needs no authentication with metrics.
func (a *API) open(path string, serve handlerFunc) http.Handler {
	rm := a.metrics.forRoute(path, "GET")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rm.done(serve(a, w, r), start)
	})
}

// recoverPanic turns a panic in a handler (a bug, never the client's doing)
// into a logged 500 problem, rather than a dropped connection.
func (a *API) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	a.log.Error("panic serving request", "request_id", telemetry.RequestID(w), "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	writeProblem(w, internalProblem) // a no-op on the wire if the reply had started
}

// Authorized reports whether r carries the API key (always true without
// one), for other transports on the same port that the key must guard.
func (a *API) Authorized(r *http.Request) bool { return a.authorized(r) }

// authorized checks the bearer token in constant time. Comparing SHA-256
// digests keeps even the key's length from leaking through timing.
func (a *API) authorized(r *http.Request) bool {
	if !a.authOn {
		return true
	}
	h := r.Header["Authorization"]
	return len(h) == 1 && a.AuthorizedHeader(h[0])
}

// AuthorizedHeader reports whether an Authorization header's value
// carries the API key (always true without one), for transports that do
// not hold an *http.Request.
func (a *API) AuthorizedHeader(h string) bool {
	if !a.authOn {
		return true
	}
	if len(h) < len("Bearer ") || !strings.EqualFold(h[:len("Bearer ")], "Bearer ") {
		return false
	}
	sum := sha256.Sum256([]byte(h[len("Bearer "):]))
	return subtle.ConstantTimeCompare(sum[:], a.keyHash[:]) == 1
}

// unmatchedHandler answers /v1 requests that match no route: 405 if the path
// exists with other methods, else 404. Both are problems, unlike ServeMux's
// plain-text replies.
func (a *API) unmatchedHandler(w http.ResponseWriter, r *http.Request) {
	rm := a.unmatched[r.Method]
	if rm == nil {
		rm = a.unmatched["OTHER"]
	}
	start := time.Now()
	status := http.StatusInternalServerError
	defer func() { rm.done(status, start) }()
	if !a.authorized(r) {
		status = writeProblem(w, newProblem(codeUnauthorized, "this route needs Authorization: Bearer <api key>"))
		return
	}
	if _, pattern := a.paths.Handler(r); pattern != "" && isClean(r.URL.EscapedPath()) {
		w.Header()["Allow"] = a.allowed[pattern]
		status = writeProblem(w, newProblem(codeMethodNotAllowed, "this route does not allow "+truncate(r.Method, 32)+"; it allows "+a.allowed[pattern][0]))
		return
	}
	status = writeProblem(w, newProblem(codeNotFound, "no route matches this path"))
}

// statusWriter records the status a wrapped handler writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func health(_ *API, w http.ResponseWriter, _ *http.Request) int {
	return sendText(w, http.StatusOK, "ok\n")
}

func (a *API) readyz(w http.ResponseWriter, _ *http.Request) int {
	if a.ready.Load() {
		return sendText(w, http.StatusOK, "ready\n")
	}
	if why := a.unready.Load(); why != nil {
		return sendText(w, http.StatusServiceUnavailable, "not ready: "+*why+"\n")
	}
	return sendText(w, http.StatusServiceUnavailable, "not ready\n")
}

func sendText(w http.ResponseWriter, status int, text string) int {
	ob := getBuf()
	*ob = append(*ob, text...)
	return send(w, status, hdrText, ob)
}
