package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// WriteMarkdown writes r as a Markdown report: parameters, results,
// latency, failures and the per-second series as tables.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# surge bench %s\n\n", r.Scenario)
	fmt.Fprintf(&b, "Started %s on %s.\n\n", r.Start.UTC().Format(time.RFC3339), machineLine(r.Machine))
	if r.Interrupted {
		b.WriteString("**The run was interrupted before its end.**\n\n")
	}
	if v := r.Verdict; v != nil {
		fmt.Fprintf(&b, "**Verdict: %s** — target %s: %s.\n\n", passWord(v.Pass), v.Target, v.Detail)
	}
	mdTable(&b, "Parameters", []string{"parameter", "value"}, paramRows(r.Params))
	mdTable(&b, "Results", []string{"metric", "value"}, resultRows(r))
	l := r.Latency
	mdTable(&b, "Latency (ms)", []string{"avg", "min", "med", "p90", "p95", "p99", "p99.9", "max"},
		[][]string{{ms2(l.Avg), ms2(l.Min), ms2(l.Med), ms2(l.P90), ms2(l.P95), ms2(l.P99), ms2(l.P999), ms2(l.Max)}})
	if r.Spike != nil {
		writeSpikeMarkdown(&b, r)
	}
	if r.TPCB != nil {
		writeTPCBMarkdown(&b, r)
	}
	if keys := failureKeys(r); len(keys) > 0 {
		rows := make([][]string, 0, len(keys))
		for _, k := range keys {
			rows = append(rows, []string{k, itoa(r.Failures[k]), itoa(r.OpFailures[k]), mdEscape(r.FailureExamples[k])})
		}
		mdTable(&b, "Failures", []string{"code", "requests", "ops", "example"}, rows)
	}
	if r.KV != nil {
		writeKVMarkdown(&b, r)
	}
	mdTable(&b, "Per second", []string{"t (s)", "requests/s", "ops/s", "failed", "p50 (ms)", "p99 (ms)", "max (ms)"}, seriesRows(r.Series))
	_, err := io.WriteString(w, b.String())
	return err
}

func machineLine(m measure.Machine) string {
	s := fmt.Sprintf("%s/%s, %d CPUs", m.OS, m.Arch, m.CPUs)
	for _, extra := range []string{m.CPUModel, m.Kernel, m.Hostname, m.GoVersion} {
		if extra != "" {
			s += ", " + extra
		}
	}
	return s
}

func paramRows(p Params) [][]string {
	rows := [][]string{
		{"target", p.Target},
		{"vus", itoa(int64(p.VUs))},
		{"duration", units.K6Duration(p.Duration.Duration())},
		{"iterations", itoa(p.Iterations)},
		{"warm-up", units.K6Duration(p.Warmup.Duration())},
		{"seed", fmt.Sprint(p.Seed)},
	}
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		rows = append(rows, []string{k, p.Extra[k]})
	}
	return rows
}

func resultRows(r *Result) [][]string {
	t := r.Totals
	rows := [][]string{
		{"elapsed", units.K6Duration(t.Elapsed.Duration())},
		{"requests", fmt.Sprintf("%s (%s/s)", units.Thousands(t.Requests), units.Rate(t.RequestsPerS))},
		{"failed requests", fmt.Sprintf("%s (%s)", units.Thousands(t.Failed), units.Percent(ratio(t.Failed, t.Requests)))},
		{"iterations", units.Thousands(t.Iterations)},
	}
	if t.OpsName != "" {
		rows = append(rows,
			[]string{t.OpsName, fmt.Sprintf("%s (%s/s)", units.Thousands(t.Ops), units.Rate(t.OpsPerS))},
			[]string{"failed " + t.OpsName, fmt.Sprintf("%s (%s)", units.Thousands(t.FailedOps), units.Percent(ratio(t.FailedOps, t.Ops)))})
	}
	rows = append(rows,
		[]string{"data sent", units.SIBytes(float64(t.BytesSent))},
		[]string{"data received", units.SIBytes(float64(t.BytesReceived))},
		[]string{"vus", itoa(int64(t.VUs))})
	if c := r.Client; c.CPU >= 0 {
		rows = append(rows, []string{"load generator CPU", fmt.Sprintf("%.1f%% of one core, %.1f µs/request", c.CPUShare*100, c.MicrosPerRequest)})
	}
	if m := r.MachineCPU; m != nil {
		rows = append(rows, []string{"machine CPU", m.String()})
	}
	if s := r.MachineStalls; s != nil {
		rows = append(rows, []string{"machine stalls", s.String()})
	}
	return rows
}

func seriesRows(series []measure.Point) [][]string {
	rows := make([][]string, 0, len(series))
	for _, p := range series {
		rows = append(rows, []string{itoa(int64(p.Second)), units.Rate(p.Rate()), units.Rate(p.OpsRate()), itoa(p.Failed),
			ms2(p.P50Ms), ms2(p.P99Ms), ms2(p.MaxMs)})
	}
	return rows
}

func ms2(ms float64) string { return fmt.Sprintf("%.2f", ms) }

func mdTable(b *strings.Builder, title string, head []string, rows [][]string) {
	fmt.Fprintf(b, "## %s\n\n| %s |\n|%s\n", title, strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r, " | "))
	}
	b.WriteString("\n")
}

// mdEscape keeps a free-text cell from breaking the table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// mdMetricTable writes a two-column table of metric names and values.
func mdMetricTable(b *strings.Builder, title string, rows [][2]string) {
	cells := make([][]string, len(rows))
	for i, row := range rows {
		cells[i] = []string{row[0], mdEscape(row[1])}
	}
	mdTable(b, title, []string{"metric", "value"}, cells)
}
