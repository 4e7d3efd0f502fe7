package report

import (
	"html/template"
	"io"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

// WriteHTML writes r as one self-contained HTML page: the scenario,
// machine and parameters, the results, throughput and latency percentiles
// over time, the latency histogram and, for a spike, the sales curve. Its
// style and charts are inline (SVG, no script), so it opens anywhere, with
// no network, and can be mailed or archived as one file.
func WriteHTML(w io.Writer, r *Result) error {
	return reportTemplate.Execute(w, newReportPage(r))
}

// reportPage is what the template shows.
type reportPage struct {
	R          *Result
	Started    string
	Machine    string
	Verdict    string
	Params     [][]string
	Results    [][]string
	Latency    [][]string
	Failures   [][]string
	Spike      [][2]string
	Throughput template.HTML
	Latencies  template.HTML
	Histogram  template.HTML
	Sales      template.HTML
}

func newReportPage(r *Result) reportPage {
	l := r.Latency
	p := reportPage{
		R:       r,
		Started: r.Start.UTC().Format(time.RFC3339),
		Machine: machineLine(r.Machine),
		Params:  paramRows(r.Params),
		Results: resultRows(r),
		Latency: [][]string{{ms2(l.Avg), ms2(l.Min), ms2(l.Med), ms2(l.P90), ms2(l.P95), ms2(l.P99), ms2(l.P999), ms2(l.Max)}},
	}
	if v := r.Verdict; v != nil {
		p.Verdict = passWord(v.Pass) + " — target " + v.Target + ": " + v.Detail
	}
	for _, k := range failureKeys(r) {
		p.Failures = append(p.Failures, []string{k, itoa(r.Failures[k]), itoa(r.OpFailures[k]), r.FailureExamples[k]})
	}
	if r.Spike != nil {
		p.Spike = spikeRows(r)
	}
	if len(r.Series) > 0 {
		p.Throughput = lineChart("seconds since start", "per second", throughputLines(r))
		p.Latencies = lineChart("seconds since start", "ms", latencyLines(r.Series))
	}
	if len(r.Histogram) > 0 {
		p.Histogram = histogramChart(r.Histogram)
	}
	if len(r.Sales) > 0 {
		p.Sales = lineChart("seconds since start", "seats sold", salesLines(r.Sales))
	}
	return p
}

// charted reports whether a point is drawn: a run's last second is often
// a sliver whose rate would be mostly noise.
func charted(p measure.Point) bool { return p.Span >= 0.5 }

// pointX is the x of a point: the middle of its second.
func pointX(p measure.Point) float64 { return float64(p.Second) + p.Span/2 }

func throughputLines(r *Result) []line {
	reqs := line{name: "requests/s", color: colorRequests, width: 2}
	ops := line{name: r.Totals.OpsName + "/s", color: colorOps, width: 2}
	for _, p := range r.Series {
		if charted(p) {
			reqs.points = append(reqs.points, xy{pointX(p), p.Rate()})
			ops.points = append(ops.points, xy{pointX(p), p.OpsRate()})
		}
	}
	if r.Totals.OpsName == "" {
		return []line{reqs}
	}
	return []line{reqs, ops}
}

// latencyLines are the per-second percentiles; seconds without a request
// have none and are left out, as are slivers.
func latencyLines(series []measure.Point) []line {
	p50 := line{name: "p50", color: colorP50, width: 2}
	p99 := line{name: "p99", color: colorP99, width: 2}
	top := line{name: "max", color: colorMax, width: 1}
	for _, p := range series {
		if p.Requests == 0 || !charted(p) {
			continue
		}
		x := pointX(p)
		p50.points = append(p50.points, xy{x, p.P50Ms})
		p99.points = append(p99.points, xy{x, p.P99Ms})
		top.points = append(top.points, xy{x, p.MaxMs})
	}
	return []line{p50, p99, top}
}

func salesLines(sales []measure.SalePoint) []line {
	sold := line{name: "seats sold", color: colorSales, width: 2}
	for _, s := range sales {
		sold.points = append(sold.points, xy{s.Second, float64(s.Sold)})
	}
	return []line{sold}
}

var reportTemplate = template.Must(template.New("report").Parse(reportHTML))

const reportHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>surge bench {{.R.Scenario}} — {{.Started}}</title>
<style>
:root { --fg: #1d2330; --muted: #6b7385; --line: #dde1e8; --bg: #fff; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #98a1b3; --line: #323846; --bg: #14171d; } }
body { margin: 0 auto; max-width: 980px; padding: 1.5rem; color: var(--fg); background: var(--bg); }
h1 { margin: 0 0 .3rem; }
h2 { margin: 2rem 0 .6rem; font-size: 1.1rem; }
p.meta { color: var(--muted); margin: 0 0 1rem; }
.verdict { padding: .5rem .8rem; border-radius: 6px; background: var(--line); font-weight: 600; }
.interrupted { color: #c62828; font-weight: 600; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .9rem; }
th, td { text-align: left; padding: .25rem .7rem .25rem 0; border-bottom: 1px solid var(--line); vertical-align: top; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 1.5rem; }
svg { width: 100%; height: auto; font-size: 11px; fill: var(--muted); }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .frame { fill: none; stroke: var(--line); }
footer { margin-top: 2rem; color: var(--muted); font-size: .8rem; }
</style>
</head>
<body>
<h1>surge bench {{.R.Scenario}}</h1>
<p class="meta">Started {{.Started}} against {{.R.Params.Target}} · load generator on {{.Machine}}</p>
{{if .R.Interrupted}}<p class="interrupted">The run was interrupted before its end.</p>{{end}}
{{with .Verdict}}<p class="verdict">Verdict: {{.}}</p>{{end}}
<div class="cols">
<section><h2>Parameters</h2><table>{{range .Params}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table></section>
<section><h2>Results</h2><table>{{range .Results}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table></section>
</div>
<h2>Latency (ms)</h2>
<table><tr><th>avg</th><th>min</th><th>med</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Latency}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
{{with .Spike}}<h2>Spike</h2>
<table>{{range .}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>{{end}}
{{with .Throughput}}<h2>Throughput over time</h2>{{.}}{{end}}
{{with .Latencies}}<h2>Latency percentiles over time (ms, per second)</h2>{{.}}{{end}}
{{with .Histogram}}<h2>Latency histogram</h2>{{.}}{{end}}
{{with .Sales}}<h2>Sales curve</h2>{{.}}{{end}}
{{with .Failures}}<h2>Failures</h2>
<table><tr><th>code</th><th>requests</th><th>ops</th><th>example</th></tr>
{{range .}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
<footer>Written by surge bench; everything in this file is inline. The run's full data: surge bench … --out result.json.</footer>
</body>
</html>
`
