package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:surge|go|process)_[a-z0-9_]+`)

// TestDashboardGrafanaQueriesExist checks that every metric the example
// Grafana dashboard (docs/grafana/surge.json) queries is one the server
// exports, once each workload has seen a request.
func TestDashboardGrafanaQueriesExist(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "grafana", "surge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &board); err != nil {
		t.Fatalf("docs/grafana/surge.json: %v", err)
	}

	s := start(t, t.TempDir())
	openAccounts(t, s.c, "g-a", "g-b")
	fund(t, s.c, "g-a", 100)
	_, r, err := s.c.Batch(BatchReq{Transfers: []TransferReq{{From: "g-a", To: "g-b", Amount: 1}}})
	must(t, r, err, http.StatusOK, "")
	mustCreateEvent(t, s.c, Event{EventName: "g-ev", Artist: "a", Areas: spikeAreas(1, 1, 2)})
	mustReserve(t, s.c, ReserveReq{UserID: "u", EventID: "g-ev", AreaID: "A0", NumOfSeats: 1, Type: "RANDOM"})
	r, err = s.c.raw(http.MethodPut, "/v0/entity?id=g", "", []byte("v"))
	must(t, r, err, http.StatusCreated, "")
	// A wallet call, as Connect JSON.
	r, err = s.c.raw(http.MethodPost, "/surge.wallet.v1.AuthService/Register", "application/json",
		[]byte(`{"username":"grafana","name":"G","password":"long enough"}`))
	must(t, r, err, http.StatusOK, "")

	families := scrapeMetrics(t, s)
	queried := 0
	for _, p := range board.Panels {
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				queried++
				if !exported(families, name) {
					t.Errorf("panel %q queries %s, which /metrics lacks", p.Title, name)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries no metric")
	}
}

// exported reports whether name is a family on /metrics, or a series of a
// histogram's or summary's (_bucket, _sum, _count).
func exported(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := families[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return true
			}
		}
	}
	return false
}
