// Package browser gives web pages on other origins what they need of
// surge: CORS for the origins an operator allows (--cors-origins), and
// gRPC-Web's text mode, which the official grpc-web JavaScript client uses
// by default and which connect-go does not speak.
package browser

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"
)

// Methods a preflight may be granted: those of surge's routes, which are
// also those VMR chat's original backend allowed.
const allowMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS"

// exposeHeaders are the response headers a page may read: the gRPC-Web
// status (in headers when a call fails before its first message), the
// request id, Retry-After of a shed request, and VMR's x-jwt-token (its
// Envoy exposed it).
const exposeHeaders = "grpc-status, grpc-message, grpc-status-details-bin, x-jwt-token, " +
	"x-request-id, retry-after, location, content-encoding"

// maxAge lets a browser keep a preflight's answer 20 days, as VMR's Envoy
// configured (browsers cap it lower: Chromium at 2 hours).
const maxAge = "1728000"

// CORS answers the preflights of the allowed origins and marks their
// requests' responses readable. A nil *CORS allows no origin.
type CORS struct {
	origins []string
	any     bool
}

// NewCORS returns the policy for origins, each a scheme://host[:port] as a
// browser sends it in Origin, or "*" for any origin. It returns nil, which
// changes nothing, for an empty list.
func NewCORS(origins []string) (*CORS, error) {
	c := &CORS{}
	for _, o := range origins {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
		case o == "*":
			c.any = true
		case isOrigin(o):
			c.origins = append(c.origins, o)
		default:
			return nil, errOrigin(o)
		}
	}
	if !c.any && len(c.origins) == 0 {
		return nil, nil
	}
	return c, nil
}

// isOrigin reports whether o is an origin as browsers send it:
// scheme://host[:port], nothing more.
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil && !strings.HasSuffix(o, "?")
}

type errOrigin string

func (e errOrigin) Error() string {
	return "cors origin " + string(e) + `: want scheme://host[:port] with no path, or "*"`
}

// allowed reports whether origin may read surge's responses.
func (c *CORS) allowed(origin string) bool {
	return c != nil && origin != "" && (c.any || slices.Contains(c.origins, origin))
}

// isPreflight reports whether a request is a CORS preflight.
func isPreflight(method, origin, requestMethod string) bool {
	return method == http.MethodOptions && origin != "" && requestMethod != ""
}

// headers are the CORS response headers for an allowed origin: every
// response gets the first three, a preflight all of them. The requested
// headers are granted as asked: the origin is trusted, and the APIs' own
// headers (Authorization, x-jwt-token, Connect's and gRPC-Web's) are many.
func (c *CORS) headers(origin string, preflight bool, requested string, set, add func(k, v string)) {
	allowOrigin := origin
	if c.any {
		allowOrigin = "*"
	}
	set("Access-Control-Allow-Origin", allowOrigin)
	add("Vary", "Origin")
	set("Access-Control-Expose-Headers", exposeHeaders)
	if !preflight {
		return
	}
	set("Access-Control-Allow-Methods", allowMethods)
	if requested != "" {
		set("Access-Control-Allow-Headers", requested)
	}
	set("Access-Control-Max-Age", maxAge)
}

// Net wraps a net/http handler: it answers the allowed origins'
// preflights itself (204) and adds the CORS headers to their other
// requests' responses. A nil c returns next.
func (c *CORS) Net(next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if !c.allowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		preflight := isPreflight(r.Method, origin, r.Header.Get("Access-Control-Request-Method"))
		c.headers(origin, preflight, r.Header.Get("Access-Control-Request-Headers"), w.Header().Set, w.Header().Add)
		if preflight {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Fast wraps a fasthttp handler as Net wraps a net/http one. The headers
// are set once next has run, since a handler may reset its response.
func (c *CORS) Fast(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	if c == nil {
		return next
	}
	return func(ctx *fasthttp.RequestCtx) {
		origin := string(ctx.Request.Header.Peek("Origin"))
		if !c.allowed(origin) {
			next(ctx)
			return
		}
		preflight := isPreflight(string(ctx.Method()), origin, string(ctx.Request.Header.Peek("Access-Control-Request-Method")))
		requested := string(ctx.Request.Header.Peek("Access-Control-Request-Headers"))
		if preflight {
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		} else {
			next(ctx)
		}
		c.headers(origin, preflight, requested, ctx.Response.Header.Set, ctx.Response.Header.Add)
	}
}
