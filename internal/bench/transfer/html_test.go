package transfer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

// TestHTMLReportOfARealRun runs the transfer scenario against the fake
// ledger and writes its report through --out's path.
func TestHTMLReportOfARealRun(t *testing.T) {
	_, srv := startFake(t)
	res, err := RunTransfer(context.Background(), testTransferConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, b := range res.Histogram {
		total += b.Count
	}
	if total != res.Totals.Requests {
		t.Errorf("histogram holds %d requests of %d", total, res.Totals.Requests)
	}
	path := filepath.Join(t.TempDir(), "report.HTML")
	if err := report.CheckOutPath(path); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteFile(path, res); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "Latency histogram") || reporttest.ExternalRef.Match(page) {
		t.Errorf("report of a real run:\n%s", page)
	}
}
