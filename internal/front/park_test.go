package front

import (
	"context"
	"net/netip"
	"testing"
)

// TestParkedRequestsHoldNoPlace: with every place taken (MaxRequests 2),
// a third request is refused; once the two park, it is served, and a
// parked request that works again takes a place for that work, refused
// while the others hold them all. Ending a parked request gives back only
// its body, once.
func TestParkedRequestsHoldNoPlace(t *testing.T) {
	g := newGuard(Limits{MaxRequests: 2, MaxWork: 10000}.withDefaults(), nil)
	a := netip.MustParseAddr("192.0.2.1")
	var waiting []context.Context
	var parks []*parking
	for range 2 {
		h, no := g.takeWork(a, 1)
		if no != nil {
			t.Fatal(no.detail)
		}
		h.body = 100
		g.bodies.take(100)
		ctx, p := g.parked(context.Background(), h)
		waiting, parks = append(waiting, ctx), append(parks, p)
	}
	if _, no := g.takeWork(a, 1); no != refuseRequests {
		t.Fatalf("a third request before the others park: %v, want refuseRequests", no)
	}
	for _, ctx := range waiting {
		Park(ctx)
		Park(ctx) // twice gives back nothing more
	}
	if got := g.requests.used.Load(); got != 0 {
		t.Fatalf("requests in progress with both parked: %d, want 0", got)
	}
	busy := []hold{}
	for range 2 {
		h, no := g.takeWork(a, 1)
		if no != nil {
			t.Fatalf("a request while the others are parked: %v", no.detail)
		}
		busy = append(busy, h)
	}
	if _, ok := Work(waiting[0]); ok {
		t.Fatal("a parked request's work taken past the bound")
	}
	g.release(busy[0])
	done, ok := Work(waiting[0])
	if !ok {
		t.Fatal("a parked request's work refused with a place free")
	}
	done()
	g.release(busy[1])
	for _, p := range parks {
		p.end()
	}
	if u := (Use{Work: g.work.used.Load(), Requests: g.requests.used.Load(), BodyBytes: g.bodies.used.Load()}); u != (Use{}) {
		t.Fatalf("held once all ended: %+v, want nothing", u)
	}
}
