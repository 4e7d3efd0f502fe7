package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// TPCBReport is the tpcb scenario's own part of a Result: every turn of
// each target, in the order they ran, and how surge's rate compares with
// PostgreSQL's.
type TPCBReport struct {
	// Scale is pgbench's scale: branches; tellers are ten times as many.
	Scale    int `json:"scale"`
	Accounts int `json:"accounts"`
	// Turns are the measured turns, alternating targets: surge,
	// postgresql, surge, ... (surge only without --pg).
	Turns []TPCBTurn `json:"turns"`
	// Surge and PostgreSQL spread each target's transactions per second
	// over its turns; PostgreSQL is nil without --pg.
	Surge      Spread  `json:"surge_tps"`
	PostgreSQL *Spread `json:"postgresql_tps,omitempty"`
	// Ratio spreads surge's rate over PostgreSQL's, one ratio per pair of
	// turns that ran back to back.
	Ratio *Spread `json:"ratio,omitempty"`
	// Consistent reports TPC-B's consistency check after the run, per
	// target: the branches', tellers' (and, where counted, accounts' and
	// history's) balances sum to the same total.
	Consistent map[string]string `json:"consistent,omitempty"`
}

// TPCBTurn is one target's measured turn.
type TPCBTurn struct {
	Target       string          `json:"target"`
	Elapsed      measure.Seconds `json:"elapsed_s"`
	Transactions int64           `json:"transactions"`
	Failed       int64           `json:"failed"`
	TPS          float64         `json:"tps"`
	Latency      Latency         `json:"latency_ms"`
}

// Spread is a median with the lowest and highest of the values it is the
// median of.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// SpreadOf is the spread of vs; the zero Spread when vs is empty.
func SpreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Sorted(slices.Values(vs))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func (s Spread) rate() string {
	return fmt.Sprintf("%s (%s–%s, %d turns)", units.Rate(s.Median), units.Rate(s.Min), units.Rate(s.Max), s.N)
}

func (s Spread) times() string {
	return fmt.Sprintf("%.2f× (%.2f–%.2f, %d pairs)", s.Median, s.Min, s.Max, s.N)
}

func tpcbRows(r *Result) [][2]string {
	t := r.TPCB
	rows := [][2]string{
		{"tpcb_shape", fmt.Sprintf("scale %d: branches %d, tellers %d, accounts %s", t.Scale, t.Scale, 10*t.Scale, units.Thousands(int64(t.Accounts)))},
		{"surge_tps", t.Surge.rate()},
	}
	if t.PostgreSQL != nil {
		rows = append(rows, [2]string{"postgresql_tps", t.PostgreSQL.rate()})
	}
	if t.Ratio != nil {
		rows = append(rows, [2]string{"ratio_surge_to_postgresql", t.Ratio.times()})
	}
	for _, target := range []string{"surge", "postgresql"} {
		if c, ok := t.Consistent[target]; ok {
			rows = append(rows, [2]string{"consistency_" + target, c})
		}
	}
	return rows
}

func tpcbTurnRows(t *TPCBReport) [][]string {
	rows := make([][]string, 0, len(t.Turns))
	for i, turn := range t.Turns {
		l := turn.Latency
		rows = append(rows, []string{units.Thousands(int64(i + 1)), turn.Target, units.Rate(turn.TPS),
			units.Thousands(turn.Transactions), units.Thousands(turn.Failed), ms2(l.Med), ms2(l.P95), ms2(l.P99)})
	}
	return rows
}

var tpcbTurnHeader = []string{"turn", "target", "tps", "transactions", "failed", "p50 (ms)", "p95 (ms)", "p99 (ms)"}

func writeTPCBSummary(b *strings.Builder, r *Result) {
	b.WriteString("\n")
	for _, row := range tpcbRows(r) {
		writeRow(b, row[0], []string{row[1]}, nil)
	}
	b.WriteString("\n")
	rows := append([][]string{tpcbTurnHeader}, tpcbTurnRows(r.TPCB)...)
	widths := make([]int, len(tpcbTurnHeader))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range rows {
		b.WriteString("    ")
		for i, c := range row {
			fmt.Fprintf(b, " %*s", widths[i], c)
		}
		b.WriteString("\n")
	}
}

func writeTPCBMarkdown(b *strings.Builder, r *Result) {
	mdMetricTable(b, "TPC-B", tpcbRows(r))
	mdTable(b, "TPC-B turns", tpcbTurnHeader, tpcbTurnRows(r.TPCB))
}
