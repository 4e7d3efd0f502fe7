package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Spread
	}{
		{nil, Spread{}},
		{[]float64{3}, Spread{Median: 3, Min: 3, Max: 3, N: 1}},
		{[]float64{4, 1, 3, 2}, Spread{Median: 2.5, Min: 1, Max: 4, N: 4}},
	} {
		if got := SpreadOf(c.in); got != c.want {
			t.Errorf("SpreadOf(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestTPCBSummaryAndMarkdown(t *testing.T) {
	r := seedResult()
	r.Scenario = "tpcb"
	pg, ratio := Spread{Median: 1000, Min: 900, Max: 1100, N: 2}, Spread{Median: 12.5, Min: 11, Max: 14, N: 2}
	r.TPCB = &TPCBReport{Scale: 1, Accounts: 100000, Surge: Spread{Median: 12500, Min: 12000, Max: 13000, N: 2},
		PostgreSQL: &pg, Ratio: &ratio, Consistent: map[string]string{"surge": "ok: every sum is 0"},
		Turns: []TPCBTurn{{Target: "surge", TPS: 12000, Transactions: 120000}, {Target: "postgresql", TPS: 900, Transactions: 9000}}}
	var sum, md bytes.Buffer
	if err := WriteSummary(&sum, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"postgresql_tps.................: 1,000 (900–1,100, 2 turns)",
		"ratio_surge_to_postgresql......: 12.50× (11.00–14.00, 2 pairs)", "consistency_surge..............: ok",
		"1      surge 12,000      120,000"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| ratio_surge_to_postgresql | 12.50× (11.00–14.00, 2 pairs) |") {
		t.Errorf("markdown lacks the ratio:\n%s", md.String())
	}
}
