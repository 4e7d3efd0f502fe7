package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// eventFigures is one event of the page's sales panel.
type eventFigures struct {
	Sold    int    `json:"sold"`
	Total   int    `json:"total"`
	SoldOut bool   `json:"sold_out"`
	Meta    string `json:"meta"`
}

// eventFiguresOf reads an event's heatmap figures from the page.
const eventFiguresOf = `((name) => {
	const ev = [...document.querySelectorAll('[data-panel="ticket-sales"] [data-event]')].find(e => e.dataset.event === name);
	if (!ev) return {sold: -1, total: -1, sold_out: false, meta: ""};
	return {sold: Number(ev.dataset.sold), total: Number(ev.dataset.total), sold_out: !!ev.querySelector('.soldout'), meta: ev.querySelector('.meta').textContent};
})`

// TestDashboardTicketSpike watches a small ticket sale in headless
// Chromium: the tickets figures move during the spike, the event's heatmap
// fills to the seats the server says were sold, and the page shows when it
// sold out.
func TestDashboardTicketSpike(t *testing.T) {
	skipIfShort(t)
	b := newBrowser(t)
	s := start(t, t.TempDir(), "--shards", "2")
	const event, areas, rows, cols = "dash-spike", 6, 4, 5
	mustCreateEvent(t, s.c, Event{EventName: event, Artist: "a", Areas: spikeAreas(areas, rows, cols)})
	b.open(t, s.url+"/", `[data-panel="ticket-sales"] [data-event="`+event+`"]`)
	sales := func() eventFigures { return eval[eventFigures](t, b, eventFiguresOf+"('"+event+"')") }
	if got := sales(); got.Sold != 0 || got.Total != areas*rows*cols || got.SoldOut {
		t.Fatalf("before the sale the page shows %+v", got)
	}

	sp := &spike{c: s.c, event: event, areas: areas, workers: 24, limit: 600}
	done := make(chan struct{})
	go func() { defer close(done); sp.run() }()
	waitPage(t, b, "tickets", "the page to show ticket traffic", func(p pageFigures) bool { return p.PeakRPS > 0 && p.PeakP99 > 0 })
	<-done
	for _, f := range sp.failures {
		t.Errorf("answer outside the contract: %s", f)
	}
	// Single seats sweep up what the spike's blocks left.
	for a := range areas {
		sweep := ReserveReq{UserID: "sweep", EventID: event, AreaID: fmt.Sprint("A", a), NumOfSeats: 1, Type: "RANDOM"}
		for reserved := true; reserved; {
			reserved = mustReserve(t, s.c, sweep).State == "RESERVED"
		}
	}

	ev := getEvent(t, s.c, event)
	var sold int
	for _, a := range ev.Areas {
		sold += a.RowCount*a.ColCount - *a.Available
	}
	if sold != areas*rows*cols || ev.SoldOutAt == "" {
		t.Fatalf("the server sold %d seats, sold out at %q", sold, ev.SoldOutAt)
	}
	var got eventFigures
	poll(t, pageWait, "the heatmap to show the sale over", func() (bool, string) {
		got = sales()
		return got.Sold == sold && got.SoldOut, fmt.Sprintf("%+v", got)
	})
	if !strings.Contains(got.Meta, "Sold out at") {
		t.Errorf("sold-out line %q", got.Meta)
	}
	var server int64
	page := waitPage(t, b, "tickets", "the page's tickets total to match /metrics", func(p pageFigures) bool {
		server = serverCount(t, s, "surge_tickets_request_seconds", func(route string) bool { return !strings.Contains(route, "health_check") })
		return p.Total == server
	})
	t.Logf("page: %d ticket requests, %d seats sold; server: %d requests, %d seats", page.Total, got.Sold, server, sold)
	b.onlyFrom(t, s.url)
	b.screenshot(t, "dashboard-ticket-spike")
	s.stop()
}
