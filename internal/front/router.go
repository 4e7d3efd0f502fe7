package front

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Route is a native fasthttp route. Pattern is "METHOD /path" or "/path"
// (any method); a path segment "{name}" matches one non-empty segment,
// which the handler reads with PathValue.
type Route struct {
	Pattern string
	Handler fasthttp.RequestHandler
	// Open routes take bodies without the API key (Options.Authorize is
	// not asked); the handler decides who may call them.
	Open bool
	// MaxBody, when positive, is the largest body the route takes: a
	// larger one is refused with 413 before it is read. Zero means
	// Options.MaxRequestBodyBytes.
	MaxBody int
}

// router serves the native routes and hands every other request on.
type router struct {
	log      *slog.Logger
	routes   []route
	fallback fasthttp.RequestHandler
	handOver func(*fasthttp.RequestCtx) bool // nil: none
	net      *netAdapter                     // the native routes for net/http requests
	// Admission of bodies (see admit.go).
	maxBody     int64
	authorize   func(authorization string) bool
	guard       *guard
	readTimeout time.Duration // fasthttp's, for a whole request (0: none)
}

type route struct {
	method   string // "": any
	segments []string
	params   []string // by segment; "" for a literal
	raw      fasthttp.RequestHandler
	measured fasthttp.RequestHandler
	open     bool
	maxBody  int64 // 0: the router's
}

// Wrap decorates a native route's handler for requests fasthttp serves
// (net/http's are measured by net/http middleware); nil wraps nothing.
type Wrap func(pattern string, h fasthttp.RequestHandler) fasthttp.RequestHandler

// routerOptions configure a router.
type routerOptions struct {
	// Wrap decorates the native routes for the requests fasthttp serves.
	Wrap Wrap
	// Fallback serves the fasthttp requests no route matches, unless
	// HandOver, when set, takes the request and its connection first
	// (reporting true).
	Fallback fasthttp.RequestHandler
	HandOver func(*fasthttp.RequestCtx) bool
	// MaxBody and OnNetRequest are NetHandler's, for the native routes'
	// requests that arrive through net/http (see Net).
	MaxBody      int64
	OnNetRequest OnNetRequest
	// Authorize and Guard admit bodies (see admit.go); Authorize nil
	// admits every key. ReadTimeout is fasthttp's, which a body's read
	// must end within.
	Authorize   func(authorization string) bool
	Guard       *guard
	ReadTimeout time.Duration
	// Logger receives the panics of handlers; nil means slog.Default().
	Logger *slog.Logger
}

// newRouter returns a router of routes.
func newRouter(routes []Route, o routerOptions) *router {
	rt := &router{log: o.Logger, maxBody: o.MaxBody, authorize: o.Authorize, guard: o.Guard, handOver: o.HandOver, readTimeout: o.ReadTimeout}
	if rt.guard == nil {
		rt.guard = newGuard(DefaultLimits, nil)
	}
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.fallback = rt.recovering(o.Fallback)
	for _, r := range routes {
		r.Handler = rt.recovering(r.Handler)
		rt.routes = append(rt.routes, compile(r, o.Wrap))
	}
	rt.net = &netAdapter{maxBody: o.MaxBody, on: o.OnNetRequest}
	return rt
}

// recovering turns a panic of h (a bug, never the client's doing) into a
// logged 500 and a closed connection: fasthttp, unlike net/http, would let
// it end the process. http.ErrAbortHandler, a handler's way to break the
// connection on purpose, is not logged.
func (rt *router) recovering(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v != http.ErrAbortHandler {
				rt.log.Error("panic serving request", "method", string(ctx.Method()), "path", string(ctx.Path()),
					"panic", v, "stack", string(debug.Stack()))
			}
			ctx.Response.Reset()
			ctx.SetConnectionClose()
			ctx.Error("internal error", fasthttp.StatusInternalServerError)
		}()
		h(ctx)
	}
}

func compile(r Route, wrap Wrap) route {
	method, path, ok := strings.Cut(r.Pattern, " ")
	if !ok {
		method, path = "", r.Pattern
	}
	c := route{raw: r.Handler, measured: r.Handler, open: r.Open, maxBody: int64(r.MaxBody)}
	c.method = method
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		name := ""
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			name = seg[1 : len(seg)-1]
		}
		c.segments = append(c.segments, seg)
		c.params = append(c.params, name)
	}
	if wrap != nil {
		c.measured = wrap(r.Pattern, r.Handler)
	}
	return c
}

// Handle serves a request fasthttp read.
func (rt *router) Handle(ctx *fasthttp.RequestCtx) {
	r := rt.match(ctx)
	held, ok := rt.admitFast(ctx, r)
	if !ok {
		return
	}
	defer rt.guard.parkedFast(ctx, held).end()
	if held.cut {
		// The handler refuses the body; the rest of it must not be read
		// as the connection's next request.
		defer func() { ctx.SetConnectionClose(); lingerAfter(ctx) }()
	}
	if r != nil {
		r.measured(ctx)
		return
	}
	if rt.handOver != nil && rt.handOver(ctx) {
		return
	}
	rt.fallback(ctx)
}

// Net returns a net/http handler that serves the native routes through
// NetHandler and everything else with next; admitNet admits their
// bodies first.
func (rt *router) Net(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route := rt.matchNet(r.Method, r.URL.Path); route != nil {
			rt.net.serve(w, r, route)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// matchNet is the native route of a net/http request, or nil.
func (rt *router) matchNet(method, path string) *route {
	for i := range rt.routes {
		if rt.routes[i].matches(method, path, nil) {
			return &rt.routes[i]
		}
	}
	return nil
}

func (rt *router) match(ctx *fasthttp.RequestCtx) *route {
	method, path := b2s(ctx.Method()), b2s(ctx.Path())
	for i := range rt.routes {
		if rt.routes[i].matches(method, path, ctx) {
			return &rt.routes[i]
		}
	}
	return nil
}

// matches reports whether method and path match r, and sets r's path
// values on ctx if it is not nil.
func (r *route) matches(method, path string, ctx *fasthttp.RequestCtx) bool {
	if r.method != "" && method != r.method {
		return false
	}
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	for i, seg := range r.segments {
		part, tail, more := strings.Cut(rest, "/")
		last := i == len(r.segments)-1
		if more == last { // too many segments, or too few
			return false
		}
		if r.params[i] == "" {
			if part != seg {
				return false
			}
		} else if part == "" {
			return false
		}
		rest = tail
	}
	if ctx != nil {
		r.setParams(path, ctx, true)
	}
	return true
}

// setParams sets r's path values of path on ctx, copies of them if path
// is a view of a buffer reused after the request (clone).
func (r *route) setParams(path string, ctx *fasthttp.RequestCtx, clone bool) {
	rest := path[1:]
	for i := range r.segments {
		part, tail, _ := strings.Cut(rest, "/")
		if r.params[i] != "" {
			if clone {
				part = strings.Clone(part)
			}
			ctx.SetUserValue(r.params[i], part)
		}
		rest = tail
	}
}

// PathValue returns the path segment named name of ctx's route.
func PathValue(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	return v
}
