package transfer

import (
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

func TestTransferVerdictExplainsButNeverWaives(t *testing.T) {
	tr, h := reporttest.StalledResult(100, 10_000)
	tr.Totals.Elapsed = 1
	tr.Latency.P95 = 25
	v := transferVerdict(tr, 0, h)
	if v.Pass || !strings.Contains(v.Detail, "p95 25ms; machine stalled 16.00% of the run, 10 stalls > 10ms") {
		t.Errorf("transfer verdict %+v", v)
	}
}
