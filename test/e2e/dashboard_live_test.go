package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// pageFigures are one workload's figures as the dashboard shows them.
type pageFigures struct {
	RPS    float64 `json:"rps"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	Total  int64   `json:"total"`
	Frames int64   `json:"frames"`
	// PeakRPS and PeakP99 are the highest of the samples the page holds,
	// so a burst shorter than a poll of the page is still seen.
	PeakRPS   float64  `json:"peak_rps"`
	PeakP99   float64  `json:"peak_p99"`
	Transfers []string `json:"transfers"`
}

// workloadFigures reads a workload's card and the ledger's transfers panel
// from the page: the exact figures each element keeps in data-value.
const workloadFigures = `((name) => {
	const card = document.querySelector('[data-workload="' + name + '"]');
	const v = k => Number(card.querySelector('.' + k).dataset.value || 0);
	const peak = f => Math.max(0, ...samples.map(s => (s.workloads.find(w => w.name === name) || {})[f] || 0));
	return {
		peak_rps: peak('rps'), peak_p99: peak('p99_ms'),
		rps: v('rps'), p50: v('p50'), p99: v('p99'), total: v('total'),
		frames: Number(document.body.dataset.frames || 0),
		transfers: [...document.querySelectorAll('[data-panel="ledger-transfers"] tr[data-transfer]')].map(r => r.dataset.transfer),
	};
})`

// Waits in the dashboard tests: bounds on conditions that a healthy run
// meets within a second or two.
const pageWait = 20 * time.Second

// waitPage polls the page until cond holds of workload's figures and
// returns them.
func waitPage(t *testing.T, b *browser, workload, what string, cond func(pageFigures) bool) pageFigures {
	t.Helper()
	var got pageFigures
	poll(t, pageWait, what, func() (bool, string) {
		got = eval[pageFigures](t, b, workloadFigures+"('"+workload+"')")
		return cond(got), fmt.Sprintf("%+v", got)
	})
	return got
}

// serverCount sums, over the series of metric family whose route label
// passes match, the counter's value or the histogram's count: the
// transports' own counts, independent of the dashboard's.
func serverCount(t *testing.T, s *server, family string, match func(route string) bool) int64 {
	t.Helper()
	var n float64
	for _, m := range scrapeMetrics(t, s)[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && match(l.GetValue()) {
				n += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return int64(n)
}

// scrapeMetrics reads and parses the server's /metrics.
func scrapeMetrics(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	r, err := s.c.raw(http.MethodGet, "/metrics", "", nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", r, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// ledgerRequests counts the ledger transport's requests.
func ledgerRequests(t *testing.T, s *server) int64 {
	return serverCount(t, s, "surge_http_requests_total", func(route string) bool { return strings.HasPrefix(route, "/v1/") })
}

// TestDashboardLive loads the dashboard of a real server in headless
// Chromium, drives transfers at it, and checks that the page's figures move
// while they run and then agree with the server's own counters.
func TestDashboardLive(t *testing.T) {
	skipIfShort(t)
	b := newBrowser(t)
	s := start(t, t.TempDir())
	accounts := []string{"dash-0", "dash-1", "dash-2", "dash-3", "dash-4", "dash-5"}
	openAccounts(t, s.c, accounts...)
	for _, id := range accounts {
		fund(t, s.c, id, 1_000_000_000)
	}
	b.open(t, s.url+"/", `[data-workload="ledger"]`)

	// A small spike: workers send transfers until the page has seen them,
	// bounded in count in case it never does.
	const workers, perWorker = 6, 5000
	stop := make(chan struct{})
	var mu sync.Mutex
	sent := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("dash-w%d-%d", w, i)
				_, r, err := s.c.Transfer(TransferReq{ID: id, From: accounts[w], To: accounts[(w+1+i%5)%len(accounts)], Amount: 1})
				if !want(t, r, err, http.StatusCreated, "") {
					return
				}
				mu.Lock()
				sent[id] = true
				mu.Unlock()
			}
		})
	}
	first := waitPage(t, b, "ledger", "the page to show ledger traffic", func(p pageFigures) bool {
		return p.RPS > 0 && p.P50 > 0 && p.P99 >= p.P50
	})
	waitPage(t, b, "ledger", "the page's ledger total to grow", func(p pageFigures) bool {
		return p.Frames > first.Frames && p.Total > first.Total
	})
	close(stop)
	wg.Wait()

	var server int64
	final := waitPage(t, b, "ledger", "the page's total to match /metrics", func(p pageFigures) bool {
		server = ledgerRequests(t, s)
		return p.Total == server
	})
	t.Logf("page: %d ledger requests, /metrics: %d; %d transfers sent", final.Total, server, len(sent))
	if len(final.Transfers) == 0 {
		t.Error("the recent-transfers panel is empty")
	}
	for _, id := range final.Transfers {
		if !sent[id] {
			t.Errorf("the recent-transfers panel shows %s, which the load did not send", id)
		}
	}
	b.onlyFrom(t, s.url)
	b.screenshot(t, "dashboard-live")
	// The page's event stream is still open: shutdown must not wait on it.
	s.stop()
}
