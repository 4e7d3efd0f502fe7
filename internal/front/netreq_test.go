package front

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestNetRequestParksAndPassesItsBody: a native route's request served by
// net/http gets its admitted body and path value, holds its place until
// it parks (Park finds its parking in the request's one context value),
// and holds nothing once it has ended.
func TestNetRequestParksAndPassesItsBody(t *testing.T) {
	g := newGuard(Limits{MaxRequests: 1, MaxWork: 100}.withDefaults(), nil)
	var got string
	var inProgress []int64
	rt := newRouter([]Route{{Pattern: "POST /r/{id}", Handler: func(ctx *fasthttp.RequestCtx) {
		got = string(ctx.PostBody()) + " " + PathValue(ctx, "id")
		inProgress = append(inProgress, g.requests.used.Load())
		Park(Context(ctx))
		inProgress = append(inProgress, g.requests.used.Load())
	}}}, routerOptions{Guard: g, MaxBody: 1 << 10})
	h := onWorkers(entering(rt.admitNet(rt.Net(http.NotFoundHandler()))), 1)
	defer h.stop()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/r/7", strings.NewReader("two seats")))
	if rec.Code != http.StatusOK || got != "two seats 7" {
		t.Fatalf("answer %d, handler saw %q; want 200, %q", rec.Code, got, "two seats 7")
	}
	if len(inProgress) != 2 || inProgress[0] != 1 || inProgress[1] != 0 {
		t.Fatalf("requests in progress before and after Park: %v, want [1 0]", inProgress)
	}
	if u := (Use{Work: g.work.used.Load(), Requests: g.requests.used.Load(), BodyBytes: g.bodies.used.Load()}); u != (Use{}) {
		t.Fatalf("held once the request ended: %+v, want nothing", u)
	}
}
