package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// writeKVSummary writes a kv result the way wrk2 prints its run (report
// 004 quotes it whole): the run's line, thread stats, the latency
// distribution, the detailed percentile spectrum and the totals, then, for
// a --find-max search, every probe, and surge's verdict.
func writeKVSummary(w io.Writer, r *Result) error {
	var b strings.Builder
	kv, t := r.KV, r.Totals
	fmt.Fprintf(&b, "Running %s test @ %s\n", wrkDuration(r.Params.Duration.Duration().Seconds()), r.Params.Target)
	fmt.Fprintf(&b, "  %d connections, %s at %s requests/s, seed %d\n", t.VUs, kv.Op, units.Rate(kv.Rate), r.Params.Seed)
	fmt.Fprintf(&b, "  %-8s%10s%10s%10s%10s\n", "Thread Stats", "Avg", "Stdev", "Max", "+/- Stdev")
	fmt.Fprintf(&b, "    Latency %10s%10s%10s%9.2f%%\n", wrkTime(r.Latency.Avg), wrkTime(kv.LatencyStdevMs),
		wrkTime(r.Latency.Max), kv.WithinStdev*100)
	avg, sd, top, within := rateStats(r.Series)
	fmt.Fprintf(&b, "    Req/Sec %10s%10s%10s%9.2f%%\n", wrkCount(avg), wrkCount(sd), wrkCount(top), within*100)
	b.WriteString("  Latency Distribution (HdrHistogram - Recorded Latency)\n")
	for _, q := range []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100} {
		fmt.Fprintf(&b, "%7.3f%%%10s\n", q, wrkTime(spectrumAt(r.Spectrum, q)))
	}
	b.WriteString("\n  Detailed Percentile spectrum:\n")
	fmt.Fprintf(&b, "%12s %12s %12s %16s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	for _, q := range r.Spectrum {
		inv := "inf"
		if q.Percentile < 100 {
			inv = fmt.Sprintf("%.2f", 1/(1-q.Percentile/100))
		}
		fmt.Fprintf(&b, "%12.3f %12.6f %12d %16s\n", q.Ms, q.Percentile/100, q.Count, inv)
	}
	fmt.Fprintf(&b, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", r.Latency.Avg, kv.LatencyStdevMs)
	fmt.Fprintf(&b, "#[Max     = %12.3f, Total count    = %12d]\n", r.Latency.Max, t.Requests)
	b.WriteString("----------------------------------------------------------\n")
	fmt.Fprintf(&b, "  %d requests in %s, %s read\n", t.Requests, wrkDuration(float64(t.Elapsed)), wrkBytes(float64(t.BytesReceived)))
	if kv.Misses > 0 {
		fmt.Fprintf(&b, "  Non-2xx or 3xx responses: %d (GETs of absent keys: 404)\n", kv.Misses)
	}
	if t.Failed > 0 {
		fmt.Fprintf(&b, "  Failed requests: %d\n", t.Failed)
	}
	if kv.Unsent > 0 {
		fmt.Fprintf(&b, "  Requests due but never sent (the connections fell behind): %d\n", kv.Unsent)
	}
	fmt.Fprintf(&b, "Requests/sec: %10.2f\n", t.RequestsPerS)
	fmt.Fprintf(&b, "Transfer/sec: %10s\n", wrkBytes(measure.PerSecond(t.BytesReceived, float64(t.Elapsed))))
	writeFailures(&b, r)
	writeCPUUse(&b, r)
	if len(kv.Probes) > 0 {
		fmt.Fprintf(&b, "\nfind-max, SLO %s: the run above is the highest rate that met it\n", kv.SLO)
		for i, p := range kv.Probes {
			fmt.Fprintf(&b, "  probe %2d: %s\n", i+1, p)
		}
	}
	if r.Interrupted {
		b.WriteString("run interrupted before its end\n")
	}
	if v := r.Verdict; v != nil {
		fmt.Fprintf(&b, "verdict: %s (target %s): %s\n", passWord(v.Pass), v.Target, v.Detail)
	}
	writeWarnings(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeKVMarkdown adds the kv scenario's tables to a Markdown report.
func writeKVMarkdown(b *strings.Builder, r *Result) {
	kv := r.KV
	mdTable(b, "Open model", []string{"rate due (/s)", "op", "unsent", "GET misses", "latency stdev (ms)"},
		[][]string{{units.Rate(kv.Rate), kv.Op, itoa(kv.Unsent), itoa(kv.Misses), ms2(kv.LatencyStdevMs)}})
	rows := make([][]string, 0, len(r.Spectrum))
	for _, q := range r.Spectrum {
		rows = append(rows, []string{fmt.Sprintf("%.6f", q.Percentile/100), fmt.Sprintf("%.3f", q.Ms), itoa(q.Count)})
	}
	mdTable(b, "Detailed percentile spectrum", []string{"percentile", "ms", "count"}, rows)
	if len(kv.Probes) == 0 {
		return
	}
	rows = rows[:0]
	for _, p := range kv.Probes {
		stalled, steal := "", ""
		if s := p.Stalls; s != nil {
			stalled = units.Percent(s.StalledShare)
		}
		if m := p.MachineCPU; m != nil {
			steal = units.Percent0(m.Steal)
		}
		rows = append(rows, []string{units.Rate(p.Rate), units.Rate(p.Achieved), ms2(p.P50Ms), ms2(p.P99Ms), ms2(p.P999Ms),
			itoa(p.Failed), itoa(p.Unsent), stalled, steal, passWord(p.Pass), mdEscape(p.whyAll())})
	}
	mdTable(b, "find-max probes, SLO "+kv.SLO, []string{"rate (/s)", "served (/s)", "p50 (ms)", "p99 (ms)", "p99.9 (ms)", "failed", "unsent",
		"machine stalled", "CPU steal", "", "why"}, rows)
}

// spectrumAt is the latency at percentile q: the first step at or beyond it.
func spectrumAt(s []measure.Quantile, q float64) float64 {
	for _, step := range s {
		if step.Percentile >= q {
			return step.Ms
		}
	}
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].Ms
}

// rateStats summarises the per-second request rates as wrk2's Req/Sec row:
// mean, standard deviation, maximum and the share within one deviation.
// Partial seconds are left out.
func rateStats(series []measure.Point) (avg, sd, top, within float64) {
	var rates []float64
	for _, p := range series {
		if p.Span == 1 {
			rates = append(rates, p.Rate())
		}
	}
	if len(rates) == 0 {
		return 0, 0, 0, 0
	}
	for _, x := range rates {
		avg += x
		top = max(top, x)
	}
	avg /= float64(len(rates))
	for _, x := range rates {
		sd += (x - avg) * (x - avg)
	}
	sd = math.Sqrt(sd / float64(len(rates)))
	for _, x := range rates {
		if math.Abs(x-avg) <= sd {
			within++
		}
	}
	return avg, sd, top, within / float64(len(rates))
}

// wrkScaled formats n in units that grow by scale, switching at 85% of the
// next one, with two decimals: wrk's format_units.
func wrkScaled(n, scale float64, units []string) string {
	i := 0
	for i < len(units)-1 && n >= scale*0.85 {
		n /= scale
		i++
	}
	return fmt.Sprintf("%.2f%s", n, units[i])
}

// wrkTime formats milliseconds as wrk does: "649.00us", "0.94ms", "1.49s".
func wrkTime(ms float64) string { return wrkScaled(ms*1e3, 1000, []string{"us", "ms", "s"}) }

// wrkCount formats a count as wrk does: "11.83k".
func wrkCount(n float64) string { return wrkScaled(n, 1000, []string{"", "k", "M", "G"}) }

// wrkBytes formats a byte count as wrk does: "43.13MB".
func wrkBytes(n float64) string { return wrkScaled(n, 1024, []string{"B", "KB", "MB", "GB", "TB"}) }

// wrkDuration formats a run's length as wrk does: "1.00m", "30.00s".
func wrkDuration(s float64) string {
	if s >= 60 {
		return fmt.Sprintf("%.2fm", s/60)
	}
	return fmt.Sprintf("%.2fs", s)
}
