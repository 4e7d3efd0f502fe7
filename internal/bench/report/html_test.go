package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
)

func TestHistogramCoversEveryRequest(t *testing.T) {
	r := measure.NewRecorder(time.Now())
	start := time.Now()
	for _, d := range []time.Duration{200 * time.Microsecond, time.Millisecond, time.Millisecond, 3 * time.Millisecond, 80 * time.Millisecond} {
		r.Record(start, start.Add(d), measure.Outcome{})
	}
	h := r.Histogram()
	if len(h) != measure.HistogramBuckets {
		t.Fatalf("%d buckets", len(h))
	}
	var total int64
	prev := 0.0
	for _, b := range h {
		if b.UpToMs <= prev {
			t.Fatalf("bucket bounds not increasing: %v", h)
		}
		prev = b.UpToMs
		total += b.Count
	}
	if total != 5 {
		t.Errorf("histogram holds %d requests, want 5", total)
	}
	if first, last := h[0], h[len(h)-1]; first.Count != 1 || last.Count != 1 || last.UpToMs < 79 || last.UpToMs > 81 {
		t.Errorf("fastest bucket %+v, slowest %+v", first, last)
	}
	if measure.NewRecorder(time.Now()).Histogram() != nil {
		t.Error("an empty recorder has a histogram")
	}
}

// htmlResult is seedResult with a histogram, a sales curve and a failure
// example that must be escaped.
func htmlResult() *Result {
	r := seedResult()
	r.Histogram = []measure.HistogramBucket{{UpToMs: 1, Count: 5}, {UpToMs: 2, Count: 50}, {UpToMs: 4, Count: 7}}
	r.Sales = []measure.SalePoint{{Second: 0.5, Sold: 1000}, {Second: 1, Sold: 5000}, {Second: 1.5, Sold: 5000}}
	r.FailureExamples["503 overloaded"] = `<script>alert("x")</script>`
	return r
}

// externalRef finds anything a page would load: a src or href attribute,
// a CSS url(), an import.
var externalRef = regexp.MustCompile(`(?i)\b(src|href)\s*=|url\(|@import`)

func TestWriteHTMLIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, htmlResult()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if m := externalRef.FindString(page); m != "" {
		t.Errorf("the report loads something (%q)", m)
	}
	if strings.Contains(page, "<script") {
		t.Error("unescaped failure example or a script in the report")
	}
	for _, want := range []string{
		"<title>surge bench transfer — 2026-01-02T03:04:05Z</title>",
		"Verdict: MISS — target ≥ 30,000 TPS with p95 ≤ 10 ms: 1,446 TPS, p95 94.17 ms",
		"<th>vus</th><td>100</td>", "<th>accounts</th><td>50000</td>",
		"<td>94.17</td>", "86,776 (1,446/s)",
		"Throughput over time", "Latency percentiles over time", "Latency histogram", "Sales curve",
		"<title>1–2 ms: 50 requests</title>", "<title>seats sold</title>",
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "linux/amd64, 2 CPUs",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg "); n != 4 {
		t.Errorf("%d charts, want 4 (throughput, latency, histogram, sales)", n)
	}
}

func TestWriteHTMLWithoutSales(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, seedResult()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Sales curve") || strings.Count(buf.String(), "<svg ") != 2 {
		t.Error("a run without histogram or sales drew them")
	}
}

func TestAxisNumbers(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 12000: "12,000", 2.5: "2.5", 1.2000000000000002: "1.2", 0.05: "0.05", 0.30000000000000004: "0.3"} {
		if got := axisNumber(v); got != want {
			t.Errorf("axisNumber(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]float64{0: 1, 3: 5, 4999: 5000, 0.07: 0.1, 2.1: 2.5, 100: 100} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
