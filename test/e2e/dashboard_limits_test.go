package e2e

import "testing"

// limitsOnPage reads the dashboard's limits panel: each limit's use and
// maximum, as the rows keep them in data-used and data-max.
const limitsOnPage = `Object.fromEntries([...document.querySelectorAll('[data-panel="front-limits"] tr[data-limit]')]
	.map(r => [r.dataset.limit, [Number(r.dataset.used), Number(r.dataset.max)]]))`

// TestDashboardShowsLimits opens the dashboard in headless Chromium: its
// limits panel shows the limits given on the command line and their use,
// the page's own event stream among it (a connection, a unit of work).
func TestDashboardShowsLimits(t *testing.T) {
	skipIfShort(t)
	b := newBrowser(t)
	s := start(t, t.TempDir(), "--max-conns", "321", "--max-inflight", "54321", "--max-inflight-requests", "123", "--max-streams", "99")
	b.open(t, s.url+"/", `[data-panel="front-limits"] tr[data-limit="max-conns"]`)
	got := eval[map[string][2]int64](t, b, limitsOnPage)
	want := map[string]int64{"max-conns": 321, "max-inflight": 54321, "max-inflight-requests": 123, "max-streams": 99, "body-budget-mb": 64 << 20}
	for name, limit := range want {
		if got[name][1] != limit {
			t.Errorf("%s: the page shows at most %d, want %d (page: %v)", name, got[name][1], limit, got)
		}
	}
	if got["max-conns"][0] < 1 || got["max-inflight"][0] < 1 || got["max-inflight-requests"][0] < 1 || got["max-streams"][0] != -1 {
		t.Errorf("in use %v: want the page's own connection and stream counted, and no total for max-streams", got)
	}
	b.screenshot(t, "dashboard-limits")
}
