package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// WriteSummary writes r in the shape of k6's end-of-test summary (see seed
// 000), so that figures compare line by line with the report: a metric per
// line, alphabetical, counts with their rate, latency as a trend. A kv
// result is written in wrk2's shape instead, as report 004 has it.
func WriteSummary(w io.Writer, r *Result) error {
	if r.KV != nil {
		return writeKVSummary(w, r) // wrk2's shape, as report 004 used
	}
	if r.Scenario == "wallet" {
		return writeGHZSummary(w, r) // report 001 is ghz output
	}
	var b strings.Builder
	writeHeader(&b, r)
	b.WriteString("\n")
	writeMetrics(&b, summaryRows(r))
	if r.Spike != nil {
		writeSpikeSummary(&b, r)
	}
	if r.TPCB != nil {
		writeTPCBSummary(&b, r)
	}
	writeFailures(&b, r)
	writeCPUUse(&b, r)
	fmt.Fprintf(&b, "\nrunning (%s), %03d/%03d VUs, %d complete", runningClock(r.Totals.Elapsed.Duration()), 0, r.Totals.VUs, r.Totals.Iterations)
	if r.Interrupted {
		// The iterations in flight were cancelled and not counted.
		b.WriteString(" iterations; run interrupted before its end\n")
	} else {
		// VUs finish their last iteration before a run ends, as k6's
		// graceful stop does, so none is ever cut short.
		b.WriteString(" and 0 interrupted iterations\n")
	}
	if v := r.Verdict; v != nil {
		fmt.Fprintf(&b, "verdict: %s (target %s): %s\n", passWord(v.Pass), v.Target, v.Detail)
	}
	writeWarnings(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func passWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "MISS"
}

// runningClock formats elapsed time like k6's "running (1m00.0s)".
func runningClock(d time.Duration) string {
	m := int(d / time.Minute)
	s := (d - time.Duration(m)*time.Minute).Seconds()
	return fmt.Sprintf("%dm%04.1fs", m, s)
}

func writeHeader(b *strings.Builder, r *Result) {
	p := r.Params
	limit := "for " + units.K6Duration(p.Duration.Duration())
	if p.Iterations > 0 {
		limit = fmt.Sprintf("for %d iterations", p.Iterations)
		if p.Duration > 0 {
			limit += " (at most " + units.K6Duration(p.Duration.Duration()) + ")"
		}
	}
	fmt.Fprintf(b, "\n     scenario: %s\n", r.Scenario)
	fmt.Fprintf(b, "       target: %s\n", p.Target)
	fmt.Fprintf(b, "    execution: %d looping VUs %s", p.VUs, limit)
	if p.Warmup > 0 {
		fmt.Fprintf(b, " after a %s warm-up", units.K6Duration(p.Warmup.Duration()))
	}
	fmt.Fprintf(b, ", seed %d\n", p.Seed)
	if len(p.Extra) > 0 {
		pairs := make([]string, 0, len(p.Extra))
		for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
			pairs = append(pairs, k+"="+p.Extra[k])
		}
		fmt.Fprintf(b, "       params: %s\n", strings.Join(pairs, " "))
	}
}

// metricRow is one line of the summary: a name and its columns. Trend rows
// (latency) are aligned among themselves, as k6 does.
type metricRow struct {
	name  string
	cols  []string
	trend bool
}

func summaryRows(r *Result) []metricRow {
	t := r.Totals
	secs := float64(t.Elapsed)
	okOps := t.Ops - t.FailedOps
	rows := []metricRow{
		{name: "checks", cols: []string{units.Percent(ratio(okOps, t.Ops)), "✓ " + itoa(okOps), "✗ " + itoa(t.FailedOps)}},
		{name: "data_received", cols: []string{units.SIBytes(float64(t.BytesReceived)), units.SIBytes(measure.PerSecond(t.BytesReceived, secs)) + "/s"}},
		{name: "data_sent", cols: []string{units.SIBytes(float64(t.BytesSent)), units.SIBytes(measure.PerSecond(t.BytesSent, secs)) + "/s"}},
		{name: "http_req_duration", cols: trendCols(r.Latency), trend: true},
		{name: "http_req_failed", cols: []string{units.Percent(ratio(t.Failed, t.Requests)), "✓ " + itoa(t.Failed), "✗ " + itoa(t.Requests-t.Failed)}},
		{name: "http_reqs", cols: countCols(t.Requests, secs)},
		{name: "iterations", cols: countCols(t.Iterations, secs)},
		{name: "vus", cols: []string{itoa(int64(t.VUs)), "min=" + itoa(int64(t.VUs)), "max=" + itoa(int64(t.VUs))}},
		{name: "vus_max", cols: []string{itoa(int64(t.VUs)), "min=" + itoa(int64(t.VUs)), "max=" + itoa(int64(t.VUs))}},
	}
	if t.OpsName != "" {
		rows = append(rows, metricRow{name: t.OpsName, cols: countCols(t.Ops, secs)})
	}
	if r.Refused != nil {
		rows = append(rows, metricRow{name: "http_req_refused", cols: countCols(r.Refused.Count, secs)},
			metricRow{name: "http_req_refused_duration", cols: trendCols(r.Refused.Latency), trend: true})
	}
	slices.SortStableFunc(rows, func(a, b metricRow) int { return cmp.Compare(a.name, b.name) })
	return rows
}

func itoa(n int64) string { return fmt.Sprint(n) }

func countCols(n int64, secs float64) []string {
	return []string{itoa(n), fmt.Sprintf("%f/s", measure.PerSecond(n, secs))}
}

func trendCols(l Latency) []string {
	return []string{
		"avg=" + units.K6Duration(units.MsDuration(l.Avg)),
		"min=" + units.K6Duration(units.MsDuration(l.Min)),
		"med=" + units.K6Duration(units.MsDuration(l.Med)),
		"max=" + units.K6Duration(units.MsDuration(l.Max)),
		"p(90)=" + units.K6Duration(units.MsDuration(l.P90)),
		"p(95)=" + units.K6Duration(units.MsDuration(l.P95)),
		"p(99)=" + units.K6Duration(units.MsDuration(l.P99)),
	}
}

// summaryNameWidth is k6's width for a metric name and its dots.
const summaryNameWidth = 31

func writeMetrics(b *strings.Builder, rows []metricRow) {
	widths := map[bool][]int{}
	for _, r := range rows {
		w := widths[r.trend]
		for i, c := range r.cols {
			if i == len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
		widths[r.trend] = w
	}
	for _, r := range rows {
		writeRow(b, r.name, r.cols, widths[r.trend])
	}
}

// writeRow writes "     name.....: col1  col2", each column padded to its
// width but the last.
func writeRow(b *strings.Builder, name string, cols []string, widths []int) {
	b.WriteString("     ")
	b.WriteString(name)
	b.WriteString(strings.Repeat(".", max(summaryNameWidth-utf8.RuneCountInString(name), 3)))
	b.WriteString(":")
	for i, c := range cols {
		b.WriteString(" ")
		b.WriteString(c)
		if i < len(cols)-1 && i < len(widths) {
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
	}
	b.WriteString("\n")
}

// writeFailures lists failures by key, most frequent first, each with the
// first detail seen.
func writeFailures(b *strings.Builder, r *Result) {
	keys := failureKeys(r)
	if len(keys) == 0 {
		return
	}
	b.WriteString("\n     failures by code:\n")
	for _, k := range keys {
		line := fmt.Sprintf("%d requests, %d ops", r.Failures[k], r.OpFailures[k])
		if ex := r.FailureExamples[k]; ex != "" {
			line += fmt.Sprintf(" (e.g. %q)", ex)
		}
		writeRow(b, "  "+k, []string{line}, nil)
	}
}

// failureKeys returns every failure key of r, most failed ops first.
func failureKeys(r *Result) []string {
	seen := map[string]bool{}
	for k := range r.Failures {
		seen[k] = true
	}
	for k := range r.OpFailures {
		seen[k] = true
	}
	keys := slices.Collect(maps.Keys(seen))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.OpFailures[b], r.OpFailures[a]), cmp.Compare(a, b))
	})
	return keys
}

// writeCPUUse writes the load generator's CPU cost, the machine's CPU
// time stolen during the measured phase and the machine's stalls in it.
func writeCPUUse(b *strings.Builder, r *Result) {
	c := r.Client
	if c.CPU < 0 && r.MachineCPU == nil && r.MachineStalls == nil {
		return
	}
	b.WriteString("\n")
	if c.CPU >= 0 {
		writeRow(b, "load_generator_cpu", []string{fmt.Sprintf("%.1f%% of one core, %.1fµs per request (GOMAXPROCS %d)",
			c.CPUShare*100, c.MicrosPerRequest, c.GOMAXPROCS)}, nil)
	}
	if m := r.MachineCPU; m != nil {
		writeRow(b, "machine_cpu", []string{m.String()}, nil)
	}
	if s := r.MachineStalls; s != nil {
		writeRow(b, "machine_stalls", []string{s.String()}, nil)
	}
}
