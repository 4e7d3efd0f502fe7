package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// limitsOnPage reads the dashboard's limits panel: each limit's use and
// maximum, as the rows keep them in data-used and data-max.
const limitsOnPage = `Object.fromEntries([...document.querySelectorAll('[data-panel="front-limits"] tr[data-limit]')]
	.map(r => [r.dataset.limit, [Number(r.dataset.used), Number(r.dataset.max)]]))`

// TestDashboardShowsLimits opens the dashboard in headless Chromium: its
// limits panel shows the limits given on the command line and their use.
// The page's own event stream is counted as a connection; once its first
// frame is sent the stream is parked, so later frames count no work for it.
func TestDashboardShowsLimits(t *testing.T) {
	skipIfShort(t)
	b := newBrowser(t)
	s := start(t, t.TempDir(), "--max-conns", "321", "--max-inflight", "54321", "--max-inflight-requests", "123", "--max-streams", "99")
	b.open(t, s.url+"/", `[data-panel="front-limits"] tr[data-limit="max-conns"]`)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool]("Number(document.body.dataset.frames) >= 2")); err != nil {
		t.Fatalf("waiting for the page's second frame: %v", err)
	}
	got := eval[map[string][2]int64](t, b, limitsOnPage)
	want := map[string]int64{"max-conns": 321, "max-inflight": 54321, "max-inflight-requests": 123, "max-streams": 99, "body-budget-mb": 64 << 20}
	for name, limit := range want {
		if got[name][1] != limit {
			t.Errorf("%s: the page shows at most %d, want %d (page: %v)", name, got[name][1], limit, got)
		}
	}
	if got["max-conns"][0] < 1 || got["max-inflight"][0] != 0 || got["max-inflight-requests"][0] != 0 || got["max-streams"][0] != -1 {
		t.Errorf("in use %v: want the page's connection counted, its parked stream holding no work, and no total for max-streams", got)
	}
	b.screenshot(t, "dashboard-limits")
}
