package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// The HTML report's charts are SVG drawn here, inline in the page: no
// script, no library, nothing fetched.

// Chart geometry, in SVG user units (the page scales the SVG to its width).
const (
	chartW, chartH                 = 760.0, 260.0
	padL, padR, padTop, padBottom  = 64.0, 16.0, 28.0, 40.0
	plotW                          = chartW - padL - padR
	plotH                          = chartH - padTop - padBottom
	axisTicks                      = 5
	colorRequests, colorOps        = "#4e79a7", "#59a14f"
	colorP50, colorP99, colorMax   = "#4e79a7", "#e15759", "#bab0ac"
	colorBars, colorSales, colorFg = "#4e79a7", "#f28e2b", "#6b7385"
)

// xy is one point of a line.
type xy struct{ x, y float64 }

// line is one series of a line chart.
type line struct {
	name   string
	color  string
	width  float64
	points []xy
}

// lineChart draws lines over a shared x axis starting at 0; yUnit labels
// the y axis.
func lineChart(xLabel, yUnit string, lines []line) template.HTML {
	xmax, ymax := 0.0, 0.0
	for _, l := range lines {
		for _, p := range l.points {
			xmax, ymax = max(xmax, p.x), max(ymax, p.y)
		}
	}
	xmax, ymax = niceCeil(xmax), niceCeil(ymax)
	X := func(x float64) float64 { return padL + x/xmax*plotW }
	Y := func(y float64) float64 { return padTop + plotH - y/ymax*plotH }
	var b strings.Builder
	openSVG(&b, ymax, Y)
	for i := 0; i <= axisTicks; i++ {
		x := xmax * float64(i) / axisTicks
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, X(x), chartH-padBottom+16, axisNumber(x))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-6, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="4" y="14">%s</text>`, html.EscapeString(yUnit))
	for i, l := range lines {
		if len(l.points) == 0 {
			continue
		}
		pts := make([]string, len(l.points))
		for j, p := range l.points {
			pts[j] = fmt.Sprintf("%.1f,%.1f", X(p.x), Y(p.y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"><title>%s</title></polyline>`,
			l.color, l.width, strings.Join(pts, " "), html.EscapeString(l.name))
		legend(&b, i, l.name, l.color)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// histogramChart draws one bar per bucket; the buckets are logarithmically
// spaced, so the bars are equally wide and the axis is logarithmic.
func histogramChart(buckets []measure.HistogramBucket) template.HTML {
	var top int64
	for _, bk := range buckets {
		top = max(top, bk.Count)
	}
	ymax := niceCeil(float64(top))
	barW := plotW / float64(len(buckets))
	Y := func(y float64) float64 { return padTop + plotH - y/ymax*plotH }
	var b strings.Builder
	openSVG(&b, ymax, Y)
	lower, labelEvery := 0.0, max(len(buckets)/axisTicks, 1)
	for i, bk := range buckets {
		x := padL + float64(i)*barW
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s–%s ms: %d requests</title></rect>`,
			x+0.5, Y(float64(bk.Count)), max(barW-1, 0.5), plotH+padTop-Y(float64(bk.Count)), colorBars,
			axisNumber(lower), axisNumber(bk.UpToMs), bk.Count)
		if i%labelEvery == 0 || i == len(buckets)-1 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+barW, chartH-padBottom+16, axisNumber(bk.UpToMs))
		}
		lower = bk.UpToMs
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">latency, ms (logarithmic buckets)</text>`, padL+plotW/2, chartH-6)
	b.WriteString(`<text x="4" y="14">requests</text></svg>`)
	return template.HTML(b.String())
}

// openSVG starts a chart: its frame, and the y axis up to ymax with a grid
// line at each tick; Y maps a value to its height.
func openSVG(b *strings.Builder, ymax float64, Y func(float64) float64) {
	fmt.Fprintf(b, `<svg viewBox="0 0 %.0f %.0f" role="img" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH)
	fmt.Fprintf(b, `<rect class="frame" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, padL, padTop, plotW, plotH)
	for i := 0; i <= axisTicks; i++ {
		v := ymax * float64(i) / axisTicks
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, Y(v), Y(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padL-6, Y(v), axisNumber(v))
	}
}

// legend writes the i-th entry of a chart's legend, along its top.
func legend(b *strings.Builder, i int, name, color string) {
	x := padL + 8 + float64(i)*120
	fmt.Fprintf(b, `<rect x="%.1f" y="8" width="14" height="4" fill="%s"/><text x="%.1f" y="14">%s</text>`, x, color, x+18, html.EscapeString(name))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so that the
// axis ticks fall on round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// axisNumber formats a tick value compactly: 12,000, 2.5, 0.05.
func axisNumber(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return units.Thousands(int64(math.Round(v)))
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}
