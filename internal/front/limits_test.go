package front

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRequestsInProgressBounded: MaxRequests counts requests, not their
// bodies: a batch-sized body and a bare request take one place each, the
// next is refused as overloaded (reason max_requests), and a place comes
// back when a request ends or when another budget refuses it.
func TestRequestsInProgressBounded(t *testing.T) {
	g := newGuard(Limits{MaxRequests: 2, MaxWork: 10000}.withDefaults(), nil)
	a := netip.MustParseAddr("192.0.2.1")
	batch, no := g.takeWork(a, g.workOf(4500*WorkUnitBytes))
	if no != nil {
		t.Fatalf("a batch: %v", no.detail)
	}
	one, no := g.takeWork(netip.MustParseAddr("192.0.2.2"), 1)
	if no != nil {
		t.Fatalf("a request beside a batch: %v", no.detail)
	}
	if _, no := g.takeWork(netip.MustParseAddr("192.0.2.3"), 1); no != refuseRequests {
		t.Fatalf("a third request with MaxRequests 2: %v, want refuseRequests", no)
	}
	if no := refuseRequests; no.status != 503 || no.code != "overloaded" || no.reason != reasonRequests {
		t.Fatalf("the refusal: %d %s %s", no.status, no.code, no.reason)
	}
	g.release(one)
	if got := g.requests.used.Load(); got != 1 {
		t.Fatalf("requests in progress after one ended: %d, want 1", got)
	}
	// Refused by the work budget, a request gives its place back.
	if _, no := g.takeWork(a, 9000); no != refuseBusy {
		t.Fatalf("a request over the work left: %v, want refuseBusy", no)
	}
	if got := g.requests.used.Load(); got != 1 {
		t.Fatalf("requests in progress after a refusal: %d, want 1", got)
	}
	g.release(batch)
	if got := g.requests.used.Load(); got != 0 {
		t.Fatalf("requests in progress once all ended: %d, want 0", got)
	}
}

// TestMaxRequestsNegativeBoundsNothing: with MaxRequests negative no
// request is refused for the count of those in progress, and none is
// counted; zero takes the default, a bound.
func TestMaxRequestsNegativeBoundsNothing(t *testing.T) {
	if got := (Limits{}).withDefaults().MaxRequests; got <= 0 {
		t.Fatalf("default MaxRequests %d, want a bound", got)
	}
	g := newGuard(Limits{MaxWork: 10000, MaxRequests: -1}.withDefaults(), nil)
	a := netip.MustParseAddr("192.0.2.1")
	var held []hold
	for i := range 1000 {
		h, no := g.takeWork(a, 1)
		if no != nil {
			t.Fatalf("request %d: %v", i, no.detail)
		}
		held = append(held, h)
	}
	if got := g.requests.used.Load(); got != 0 {
		t.Fatalf("requests counted without a bound: %d", got)
	}
	for _, h := range held {
		g.release(h)
	}
}

// A budget's count never passes its limit, not even for a moment while a
// take is refused: a place given back in that moment would see no room,
// and a parked HTTP/2 stream would wait for its reader's retry though the
// place is free. Whoever holds the only place looks at the count while
// the others are refused.
func TestBudgetNeverPassesItsLimit(t *testing.T) {
	b := &budget{limit: 1}
	var over atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20_000 {
				if !b.take(1) {
					continue
				}
				for range 32 {
					if b.used.Load() > b.limit {
						over.Add(1)
					}
				}
				b.give(1)
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Fatalf("the count passed the limit %d times", n)
	}
	if u := b.used.Load(); u != 0 {
		t.Fatalf("%d held after every take was given back", u)
	}
}
